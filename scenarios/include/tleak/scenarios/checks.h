// `tleak check`: expectations about the catalogue's scenarios, read from a checks file, each run
// fresh and judged; or fresh runs compared against stored baseline reports with diff's rules.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tleak/diagnosis/diff.h"
#include "tleak/diagnosis/report.h"

namespace tleak::scenarios {

inline constexpr const char* kChecksSchema = "tleak.checks/1";

struct Expectation {
  std::string scenario;               // a built-in scenario, or empty for a command
  std::vector<std::string> command;   // a program run as `tleak run -- COMMAND` (argv)
  std::string record;                 // with a command: `tleak run --record NAME` (empty: none)
  bool record_fork = false;           // with a command: `tleak run --record-fork`
  std::string variant = "leaky";
  std::string mode;  // empty: the scenario's own
  std::optional<std::uint64_t> iterations;
  std::optional<std::string> verdict;
  std::optional<std::int64_t> max_leaked_bytes;
  std::optional<double> max_growth_bytes_per_iteration;
  std::optional<std::int64_t> max_retained_peak_bytes;

  // "graph-ops-in-loop leaky (graph)" or "command ./train --epochs 1": how lines and test names
  // call it.
  std::string name() const;
};

struct CheckResult {
  Expectation expectation;
  bool passed = false;
  std::string detail;  // what was found, or why it failed
  double seconds = 0;
};

class CheckError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Reads and validates a checks file; every scenario must exist and every mode be supported.
// Throws CheckError naming the file and the problem.
std::vector<Expectation> read_checks_file(const std::string& path);

// Runs the scenario of `e` (resolving its default mode into `e`), or its command under the agent
// at `agent_path`, and returns its report. A command that cannot start throws CheckError.
diagnosis::Report run_expectation(Expectation& e, const std::string& agent_path = "");
// Judges a fresh report against the expectation's verdict and limits.
CheckResult judge(const Expectation& e, const diagnosis::Report& report);
// Judges a fresh report against a baseline report with diff's rules.
CheckResult judge_against_baseline(const Expectation& e, const diagnosis::Report& fresh,
                                   const diagnosis::Report& baseline, const diagnosis::FailPolicy& policy);

std::string baseline_file_name(const Expectation& e);  // "<scenario>.<variant>.<mode>.json"
std::string junit_xml(const std::vector<CheckResult>& results);

}  // namespace tleak::scenarios
