// Comparing two reports of the same workload (before and after a change): sites are matched by
// their symbolized frames (function and module of every frame), never by addresses or ids, so runs
// of different builds line up. The result lists every site's changes, largest first, and which of
// them are regressions: a worse verdict, more bytes leaked, a steeper growth, more retained.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tleak/diagnosis/report.h"
#include "tleak/diagnosis/report_summary.h"

namespace tleak::diagnosis {

inline constexpr const char* kDiffSchema = "tleak.diff/1";

enum class RegressionKind { kLeak, kGrowth, kRetained, kPeak };
const char* to_string(RegressionKind kind);

struct Regression {
  RegressionKind kind;
  std::string what;      // one sentence naming the site and the change
  std::int64_t bytes;    // size of the change: bytes leaked, per-iteration growth, retained or peak bytes
  bool verdict_worse = false;  // the site's verdict got worse: fails a gate on its kind at any size
};

struct SiteDelta {
  // "changed", "unchanged", "new" (only in B) or "gone" (only in A); "unlisted_a" (only in B, while
  // A left bounded sites out: it may be one of them) or "unlisted_b" (the same the other way).
  std::string status;
  std::string label;
  std::string verdict_a, verdict_b;  // empty where the site is absent or not listed
  std::int64_t peak_live_a = 0, peak_live_b = 0;
  std::int64_t final_live_a = 0, final_live_b = 0;
  std::int64_t leaked_a = 0, leaked_b = 0;
  double slope_a = 0, slope_b = 0;
  std::int64_t retained_peak_a = 0, retained_peak_b = 0;
  std::vector<Regression> regressions;
  std::vector<std::string> improvements;
  double magnitude = 0;  // largest byte change of this site, for ordering
  // Not listed on one side, where that report left bounded sites out: there its peak and final
  // live bytes are unknown, at most `unlisted_peak_at_most` (its leaked, growth and retained bytes:
  // none); its figures on that side stay 0.
  bool unlisted_a = false, unlisted_b = false;
  std::int64_t unlisted_peak_at_most = 0;
};

struct DiffTotals {
  std::int64_t peak_live_a = 0, peak_live_b = 0;
  std::int64_t final_live_a = 0, final_live_b = 0;
  std::int64_t leaked_a = 0, leaked_b = 0;
  std::int64_t retained_peak_a = 0, retained_peak_b = 0;
  double slope_a = 0, slope_b = 0;
  bool retained_measured_a = true, retained_measured_b = true;  // ReportSummary::retained_measured
  bool leaks_judged_a = true, leaks_judged_b = true;            // ReportSummary::leaks_judged
};

// What one report lists and leaves out (ReportSummary::unlisted_sites, unlisted_largest_peak).
struct Listing {
  std::size_t sites = 0;
  std::uint64_t left_out = 0;
  std::int64_t left_out_largest_peak = 0;
};

struct Diff {
  std::string scenario_a, scenario_b;
  std::string variant_a, variant_b;
  bool forced = false;  // different scenarios or programs compared on request
  StepWords words_a = iteration_words(), words_b = iteration_words();  // what each run's slopes are per
  DiffTotals totals;
  std::vector<SiteDelta> sites;  // changed first, largest change first
  std::size_t new_sites = 0, gone_sites = 0, changed_sites = 0, unlisted_sites = 0;
  Listing listed_a, listed_b;

  std::vector<Regression> regressions() const;
};

class DiffError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws DiffError when the reports are of different scenarios or programs and `force` is false.
Diff diff_reports(const ReportSummary& a, const ReportSummary& b, bool force);
// Reads both files (in parallel) and diffs them. Throws ReportError or DiffError.
Diff diff_report_files(const std::string& a, const std::string& b, bool force);
// The key a site is matched by: "function|module|file:line" of each frame, one per line, and a
// frame's columns where the report gives them (two calls on one line are two sites).
std::string site_key(const std::vector<Frame>& frames);
// The same without columns: a report of a tleak that gave none (it could not tell two calls on one
// line apart) matches a newer one's sites on it.
std::string site_line_key(const std::vector<Frame>& frames);
// The same without lines: two sites that differ only in lines match on it when each is alone
// (the code moved between builds).
std::string site_loose_key(const std::vector<Frame>& frames);
// The loose key of the frames not inlined ("inlined": a function the compiler put into the next
// frame): a site matches on it, when alone, a report without inlined frames.
std::string site_physical_key(const std::vector<Frame>& frames);
// One frame's part of each key (file name without directories: builds differ in where); columns
// of 0: none.
void append_frame_key(std::string& key, std::string_view function, std::string_view module, std::string_view file,
                      std::int64_t line, std::int64_t column = 0, std::int64_t end_column = 0);
void append_frame_loose_key(std::string& key, std::string_view function, std::string_view module);

nlohmann::json to_json(const Diff& diff);
std::string render_text(const Diff& diff, std::size_t max_sites = 20);

// Whether the diff should fail a gate: a regression of one of `kinds` larger than `max_increase`
// bytes, or a total peak increase beyond `max_increase` when that limit was given.
struct FailPolicy {
  std::vector<RegressionKind> kinds;
  std::optional<std::int64_t> max_increase;
};
bool fails(const Diff& diff, const FailPolicy& policy);
// The policy for --fail-on names ("leak", "growth", "retained", "any": the three) and an optional
// --max-increase size text. Throws std::invalid_argument naming a bad size.
FailPolicy fail_policy(const std::vector<std::string>& kinds, const std::string& max_increase);

// "1MiB", "512 KiB", "2G", "1.5MB", "4096": bytes. Throws std::invalid_argument naming the text.
std::int64_t parse_size(const std::string& text);

}  // namespace tleak::diagnosis
