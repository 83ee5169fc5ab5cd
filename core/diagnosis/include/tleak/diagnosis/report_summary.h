// What `tleak diff` needs of a report, and a reader that gets only that, fast: reports of 100,000
// sites are hundreds of megabytes, and the full reader spends seconds building every field. This
// one parses with simdjson and keeps, per site, the frame key, label, verdict and the figures
// compared. It checks the schema exactly as the full reader does.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tleak/diagnosis/report.h"
#include "tleak/diagnosis/step_words.h"

namespace tleak::diagnosis {

struct SiteSummary {
  std::string key;        // site_key(frames): function, module, file name, line (and columns) of every frame
  std::string line_key;   // site_line_key(frames): without columns, for a report that gave none
  std::string loose_key;  // site_loose_key(frames): without lines, for code that moved
  // site_physical_key(frames): the loose key of the frames that are not inlined, for a report that
  // names no inlined frames (a tleak before them) or a build that inlined other calls
  std::string physical_key;
  std::string label;
  std::string verdict;
  std::int64_t peak_live_bytes = 0;
  std::int64_t final_live_bytes = 0;
  std::int64_t leaked_bytes = 0;
  double slope_bytes_per_iteration = 0;
  std::int64_t retained_peak_bytes = 0;
  bool has_columns = false;  // some frame's columns are given (key and line_key differ)
};

struct ReportSummary {
  std::string scenario, variant;
  std::int64_t peak_live_bytes = 0, final_live_bytes = 0, leaked_bytes = 0, retained_peak_bytes = 0;
  double slope_bytes_per_iteration = 0;
  std::vector<SiteSummary> sites;
  StepWords words = iteration_words();  // what the slopes are per (a program's time samples, or iterations)
  // The bounded sites the report left out past its site limit (omitted_sites), each at most this
  // peak: a site only the other report lists may be among them.
  std::uint64_t unlisted_sites = 0;
  std::int64_t unlisted_largest_peak = 0;
  // Whether dead-but-held bytes were measured at all (never for a program, whose uses tleak does not
  // see, nor for a run with --no-track).
  bool retained_measured = true;
  // Whether its leaks were looked for: not for a program that ended without an exit scan, its
  // blocks left unjudged (leaks_unjudged()).
  bool leaks_judged = true;
  // A program's command line (run.program); empty for a scenario's run. Reports of one command are
  // of one program whatever name each gives it (an older tleak named a Python program python3.11).
  std::vector<std::string> command = {};
  // run.program.record: the program of the command's that was recorded (tleak run --record); empty:
  // the command's own process. One command recorded by two names is two programs.
  std::string record = {};
  // run.program.forked_copy (tleak run --record-fork): a copy the command's process forked.
  bool forked_copy = false;
};

ReportSummary summarize(const Report& report);
// Throws ReportError with the same messages as read_report_file.
ReportSummary read_report_summary(const std::string& path);

// Throws ReportError unless `schema` names a tleak report this build can read.
void check_report_schema(std::string_view schema);

}  // namespace tleak::diagnosis
