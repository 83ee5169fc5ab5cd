#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli_error.h"
#include "commands.h"
#include "fail_policy.h"
#include "program_args.h"
#include "tleak/diagnosis/atomic_file.h"
#include "tleak/diagnosis/report_json.h"
#include "tleak/scenarios/checks.h"

namespace tleak::cli {
namespace {

struct CheckArgs {
  std::string checks = TLEAK_DEFAULT_CHECKS;
  std::string baseline;
  bool update_baseline = false;
  std::string junit;
  std::vector<std::string> fail_on = {"any"};
  std::string max_increase;
};

}  // namespace

Command add_check_command(CommandLine& app) {
  Subcommand sub = app.add_subcommand("check", "Run the scenarios and commands of a checks file and judge them (a CI gate)");
  auto args = std::make_shared<CheckArgs>();
  sub.option("--checks", args->checks, "Checks file (JSON, schema tleak.checks/1)").default_in_help();
  sub.option("--baseline", args->baseline, "Compare fresh runs against the reports in DIR instead of the expectations");
  sub.flag("--update-baseline", args->update_baseline, "Write fresh reports into the --baseline DIR");
  sub.option("--junit", args->junit, "Also write JUnit XML results to FILE");
  sub.option("--fail-on", args->fail_on, "With --baseline: regression kinds that fail (default any)")
      .one_of({"leak", "growth", "retained", "any"})
      .one_value_each_time();
  sub.option("--max-increase", args->max_increase, "With --baseline: tolerate regressions up to this many bytes");
  return [args] {
    if (args->update_baseline && args->baseline.empty()) throw UsageError("--update-baseline needs --baseline DIR");
    const diagnosis::FailPolicy policy = policy_from(args->fail_on, args->max_increase);
    std::vector<scenarios::Expectation> checks;
    try {
      checks = scenarios::read_checks_file(args->checks);
    } catch (const scenarios::CheckError& e) {
      throw UsageError(e.what());
    }
    if (!args->junit.empty()) {
      try {
        diagnosis::check_writable(args->junit);
      } catch (const diagnosis::FileError& e) {
        throw UsageError(e.what());
      }
    }
    if (!args->baseline.empty()) {
      std::error_code ec;
      if (args->update_baseline) std::filesystem::create_directories(args->baseline, ec);
      if (!std::filesystem::is_directory(args->baseline)) {
        throw UsageError("--baseline " + args->baseline + ": not a directory");
      }
    }
    std::vector<scenarios::CheckResult> results;
    // --update-baseline writes nothing until every run succeeded: all the baselines, or none.
    std::vector<std::pair<std::string, std::string>> baselines;
    for (scenarios::Expectation& e : checks) {
      diagnosis::Report fresh;
      try {
        fresh = scenarios::run_expectation(e, agent_library_path());
      } catch (const scenarios::CheckError& error) {
        throw UsageError(error.what());
      }
      scenarios::CheckResult result;
      if (args->baseline.empty()) {
        result = scenarios::judge(e, fresh);
      } else {
        const std::string path = (std::filesystem::path(args->baseline) / scenarios::baseline_file_name(e)).string();
        if (args->update_baseline) {
          const auto& program = fresh.run.program;
          if (program && (program->exit_signal || program->exit_status.value_or(0) != 0)) {
            result = {e, false, "the program failed; no baseline from this run", fresh.run.duration_seconds};
          } else {
            baselines.emplace_back(path, diagnosis::report_file_text(fresh));
            result = {e, true, "baseline for " + path, fresh.run.duration_seconds};
          }
        } else {
          try {
            result = scenarios::judge_against_baseline(e, fresh, diagnosis::read_report_file(path), policy);
          } catch (const diagnosis::ReportError& err) {
            result = {e, false, std::string("no usable baseline: ") + err.what(), fresh.run.duration_seconds};
          }
        }
      }
      std::printf("%s  %s: %s\n", result.passed ? "PASS" : "FAIL", e.name().c_str(), result.detail.c_str());
      std::fflush(stdout);
      results.push_back(std::move(result));
    }
    const auto failed = static_cast<std::size_t>(std::count_if(results.begin(), results.end(), [](const auto& r) { return !r.passed; }));
    if (args->update_baseline) {
      if (failed > 0) {
        std::fprintf(stderr, "tleak: baselines not updated: %zu run(s) failed\n", failed);
      } else {
        for (const auto& [path, text] : baselines) diagnosis::write_file_atomically(path, text);
      }
    }
    std::printf("%zu passed, %zu failed\n", results.size() - failed, failed);
    if (!args->junit.empty()) diagnosis::write_file_atomically(args->junit, scenarios::junit_xml(results));
    return failed == 0 ? kExitClean : kExitFinding;
  };
}

}  // namespace tleak::cli
