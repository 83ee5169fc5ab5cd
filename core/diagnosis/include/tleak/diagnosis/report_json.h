// Reading and writing reports as JSON. Readers check the schema name and version first, so a
// newer or foreign document is refused with a message that says which, never half-read.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tleak/diagnosis/report.h"

namespace tleak::diagnosis {

// The largest column a report's frame may give (1-based, end one past): one past the end of the
// widest line whose columns the agent sends (agent::kMaxPythonColumn, checked in report_json.cc).
inline constexpr std::int64_t kMaxReportColumn = (std::int64_t{1} << 20) + 1;

class ReportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

nlohmann::json to_json(const Report& report);
// The parts, for a writer that handles sites one at a time (a page of 100,000 sites): the report
// with an empty "sites", and one site as it appears in "sites".
nlohmann::json to_json_without_sites(const Report& report);
nlohmann::json to_json(const SiteReport& site);
// The report as tleak writes it, newline-terminated: indented for a person, or on one line when
// it is large (kLargeReportSites; a program's report can have thousands of sites, each with its
// samples: indentation alone would double a file of a hundred megabytes).
std::string report_file_text(const Report& report);
// Throws ReportError naming the problem: not a tleak report, a newer schema, a missing or
// mistyped field (with the part of the report it is in).
Report report_from_json(const nlohmann::json& json);
// Reads and parses a file; `what` names it in messages. Throws ReportError.
Report read_report_file(const std::string& path);
// The kind a report's frame names ("native", "inlined", "python"); for any other, ReportError
// saying so, and where (e.g. "sites[3]") when `where` is given. Both readers of reports ask it.
FrameKind frame_kind_in_report(std::string_view name, std::string_view where = {});
// The JSON library's message for a user: without its own tag ("[json.exception.out_of_range.403]
// key 'pid' not found" reads "key 'pid' not found"). Both readers of files users write use it.
std::string json_error_text(const nlohmann::json::exception& e);

// Applies "name=value" overrides to the default classifier options. Throws ReportError naming an
// unknown option (and listing the known ones) or a value that is not a number.
ClassifierOptions thresholds_with_overrides(const std::vector<std::string>& overrides);

}  // namespace tleak::diagnosis
