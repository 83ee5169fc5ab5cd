#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli_error.h"
#include "commands.h"
#include "scenario_lookup.h"
#include "tleak/diagnosis/atomic_file.h"
#include "tleak/diagnosis/report_json.h"
#include "tleak/diagnosis/report_text.h"
#include "tleak/diagnosis/session.h"

namespace tleak::cli {
namespace {

struct RunArgs {
  std::string scenario;
  std::string variant = "leaky";
  std::string mode;
  std::uint64_t iterations = 0;  // 0: the scenario's default
  double scale = 1.0;
  int stack_depth = 12;
  std::string output;
  std::string format;
  std::string fail_on;
  std::vector<std::string> thresholds;
  bool no_track = false;
  bool no_valgrind_annotations = false;
};

// "iteration 37/100" on one refreshed line, at most ten times a second, only on a terminal.
class Progress {
 public:
  Progress() : enabled_(isatty(STDERR_FILENO) == 1) {}
  ~Progress() {
    if (shown_) std::fprintf(stderr, "\r\033[K");
  }
  void operator()(std::uint64_t done, std::uint64_t total) {
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    if (done != total && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    shown_ = true;
    std::fprintf(stderr, "\rtleak: iteration %llu/%llu", static_cast<unsigned long long>(done),
                 static_cast<unsigned long long>(total));
    std::fflush(stderr);
  }

 private:
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point last_{};
};

int exit_code_for(const diagnosis::Report& report, const std::string& fail_on) {
  if (fail_on.empty()) return kExitClean;
  const auto& s = report.summary;
  const bool fail = (fail_on == "any" && (s.leak_sites + s.growth_sites + s.retained_sites) > 0) ||
                    (fail_on == "leak" && s.leak_sites > 0) || (fail_on == "growth" && s.growth_sites > 0) ||
                    (fail_on == "retained" && s.retained_sites > 0);
  return fail ? kExitFinding : kExitClean;
}

}  // namespace

Command add_run_command(CLI::App& app) {
  auto* sub = app.add_subcommand("run", "Run a scenario under the tracker and report what leaks, grows or is retained");
  auto args = std::make_shared<RunArgs>();
  sub->add_option("scenario", args->scenario, "Scenario id (see tleak list)")->required();
  sub->add_option("--variant", args->variant, "leaky: the pattern as written; fixed: the remedy")
      ->check(CLI::IsMember({"leaky", "fixed"}));
  sub->add_option("--mode", args->mode, "Execution mode (default: the scenario's own)")
      ->check(CLI::IsMember({"eager", "graph", "jit"}));
  sub->add_option("--iterations", args->iterations, "Loop iterations (default: the scenario's)")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1'000'000}));
  sub->add_option("--scale", args->scale, "Multiplies tensor sizes")->check(CLI::Range(0.01, 100.0));
  sub->add_option("--stack-depth", args->stack_depth, "Frames kept per allocation stack")
      ->check(CLI::Range(0, 64));
  sub->add_option("--output,-o", args->output, "Also write the JSON report to FILE (atomically)");
  sub->add_option("--format", args->format, "What stdout gets: json (default without --output) or text")
      ->check(CLI::IsMember({"json", "text"}));
  sub->add_option("--fail-on", args->fail_on, "Exit 1 when a site has this verdict")
      ->check(CLI::IsMember({"leak", "growth", "retained", "any"}));
  sub->add_option("--threshold", args->thresholds,
                  "Override a classifier threshold, name=value (repeatable; names as in the report)");
  sub->add_flag("--no-track", args->no_track, "Run on the raw allocators (cost baseline; no sites)");
  sub->add_flag("--no-valgrind-annotations", args->no_valgrind_annotations,
                "Do not register pool blocks with memcheck (shows what it misses)");

  return [args] {
    const scenarios::Scenario& scenario = require_scenario(args->scenario);
    diagnosis::SessionOptions options = session_options(scenario, args->variant, args->mode);
    if (!args->output.empty()) {
      try {
        diagnosis::check_writable(args->output);  // refuse before a long run, not after
      } catch (const diagnosis::FileError& e) {
        throw UsageError(e.what());
      }
    }
    try {
      options.thresholds = diagnosis::thresholds_with_overrides(args->thresholds);
    } catch (const diagnosis::ReportError& e) {
      throw UsageError(e.what());
    }
    if (args->iterations != 0) options.params.iterations = args->iterations;
    options.params.scale = args->scale;
    options.stack_depth = args->stack_depth;
    options.track = !args->no_track;
    options.valgrind_annotations = !args->no_valgrind_annotations;
    Progress progress;
    options.progress = [&progress](std::uint64_t done, std::uint64_t total) { progress(done, total); };

    const diagnosis::Report report = diagnosis::run_workload(scenario.run, options);
    const std::string json = diagnosis::to_json(report).dump(2) + "\n";
    if (!args->output.empty()) diagnosis::write_file_atomically(args->output, json);
    const std::string format = !args->format.empty() ? args->format : (args->output.empty() ? "json" : "text");
    std::cout << (format == "json" ? json : diagnosis::render_text(report)) << std::flush;
    return exit_code_for(report, args->fail_on);
  };
}

}  // namespace tleak::cli
