#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>

#include "cli_error.h"
#include "commands.h"
#include "program_args.h"
#include "scenario_lookup.h"
#include "tleak/diagnosis/atomic_file.h"
#include "tleak/diagnosis/interruption.h"
#include "tleak/diagnosis/memcheck_run.h"
#include "tleak/diagnosis/program_session.h"
#include "tleak/diagnosis/report_json.h"
#include "tleak/diagnosis/report_text.h"
#include "tleak/diagnosis/session.h"
#include "tleak/diagnosis/signal_name.h"
#include "tleak/diagnosis/step_words.h"
#include "tleak/web/report_page.h"

namespace tleak::cli {
namespace {

struct RunArgs {
  std::string scenario;
  std::string variant = "leaky";
  std::string mode;
  std::uint64_t iterations = 0;  // 0: the scenario's default
  double scale = 1.0;
  bool scale_given = false;  // set from the command line once parsed
  int stack_depth = 12;
  std::string output;
  std::string html;
  std::string format;
  std::string fail_on;
  std::vector<std::string> thresholds;
  bool no_track = false;
  bool no_valgrind_annotations = false;
  bool valgrind = false;
  // Only with -- COMMAND:
  std::string sample_every;
  std::string max_live;
  std::string snapshot_signal;
  std::string focus;
  std::string record;
  bool record_given = false;  // set from the command line once parsed (an empty NAME is refused)
  bool record_fork = false;
  std::size_t max_sites = diagnosis::kDefaultMaxSites;
  bool max_sites_given = false;  // set from the command line once parsed
};

// The arguments that reproduce this run in a child (for --valgrind), without output options.
std::vector<std::string> child_arguments(const RunArgs& a) {
  std::vector<std::string> out = {a.scenario, "--variant", a.variant, "--stack-depth", std::to_string(a.stack_depth)};
  if (!a.mode.empty()) out.insert(out.end(), {"--mode", a.mode});
  if (a.iterations != 0) out.insert(out.end(), {"--iterations", std::to_string(a.iterations)});
  if (a.scale_given) out.insert(out.end(), {"--scale", std::to_string(a.scale)});
  for (const std::string& t : a.thresholds) out.insert(out.end(), {"--threshold", t});
  if (a.no_track) out.push_back("--no-track");
  if (a.no_valgrind_annotations) out.push_back("--no-valgrind-annotations");
  return out;
}

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

// `text` as a part of a file name: letters, digits, '-', '_' and '.' kept, any other character '_',
// at most 64 of them (a script's name may be as long as a file name can be, and the report's name
// holds more), `prefix` first when it would be empty or start with '.'.
std::string file_name_part(const std::string& text, const std::string& prefix) {
  std::string safe;
  for (const char c : text.substr(0, 64)) {
    safe += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '_';
  }
  if (safe.empty() || safe[0] == '.') safe = prefix + safe;
  return safe;
}

// The report's file without --output: named after the program and its pid, in the current directory.
std::string default_report_file(const std::string& program, int pid) {
  return "tleak-" + file_name_part(program, "program") + "-" + std::to_string(pid) + ".json";
}

// A snapshot's file, beside the report's: REPORT.snapshot-N-NAME.json.
std::string snapshot_file(const std::string& output, const std::string& program, int pid,
                          const std::string& name, int index) {
  const std::string safe = file_name_part(name, "snapshot");
  std::string stem = output.empty() ? default_report_file(program, pid) : output;
  if (stem.size() > 5 && stem.compare(stem.size() - 5, 5, ".json") == 0) stem.resize(stem.size() - 5);
  return stem + ".snapshot-" + std::to_string(index) + "-" + safe + ".json";
}

int exit_code_for(const diagnosis::Report& report, const std::string& fail_on) {
  if (fail_on.empty()) return kExitClean;
  // A gate on growth cannot pass on a run too short to measure it.
  if ((fail_on == "growth" || fail_on == "any") && !report.total_growth.assessed) {
    std::fprintf(stderr, "tleak: --fail-on %s: growth was not assessed (%s; at least %llu needed)\n",
                 fail_on.c_str(), diagnosis::step_words(report.run).count(report.run.iterations).c_str(),
                 static_cast<unsigned long long>(diagnosis::iterations_needed_for_growth(report.thresholds)));
    return kExitFinding;
  }
  // Nor a gate on leaks on a run whose leaks were not looked for.
  if ((fail_on == "leak" || fail_on == "any") && diagnosis::leaks_unjudged(report)) {
    std::fprintf(stderr, "tleak: --fail-on %s: %s\n", fail_on.c_str(), diagnosis::kLeaksNotJudged);
    return kExitFinding;
  }
  const auto& s = report.summary;
  const bool fail = (fail_on == "any" && (s.leak_sites + s.growth_sites + s.retained_sites) > 0) ||
                    (fail_on == "leak" && s.leak_sites > 0) || (fail_on == "growth" && s.growth_sites > 0) ||
                    (fail_on == "retained" && s.retained_sites > 0);
  return fail ? kExitFinding : kExitClean;
}

// tleak run [options] -- COMMAND ARGS...
int run_program_command(const RunArgs& args) {
  if (!args.scenario.empty()) {
    throw UsageError("run: either a scenario or -- COMMAND, not both (got '" + args.scenario + "' and a command)");
  }
  if (args.no_track || args.valgrind || args.no_valgrind_annotations || args.variant != "leaky" ||
      !args.mode.empty() || args.iterations != 0 || args.scale_given) {
    throw UsageError("run -- COMMAND: --variant, --mode, --iterations, --scale, --no-track, --valgrind and "
                     "--no-valgrind-annotations apply to scenarios only");
  }
  diagnosis::ProgramOptions options;
  options.command = trailing_command();
  options.agent_path = agent_library_path();
  options.python_path = python_module_dir();
  options.focus = args.focus;
  // Given empty, it would mean "the command's own process" (ProgramOptions::record): refused.
  if (args.record_given && args.record.empty()) throw UsageError("--record: give " + *diagnosis::record_name_problem(""));
  options.record = args.record;
  options.record_fork = args.record_fork;
  options.stack_depth = args.stack_depth;
  options.max_sites = args.max_sites;
  if (!args.sample_every.empty()) options.sample_seconds = parse_duration("--sample-every", args.sample_every);
  if (!args.max_live.empty()) options.max_live_bytes = parse_size("--max-live", args.max_live);
  if (!args.snapshot_signal.empty()) options.snapshot_signal = parse_signal("--snapshot-signal", args.snapshot_signal);
  try {
    options.thresholds = diagnosis::thresholds_with_overrides(args.thresholds);
    if (!args.output.empty()) {
      diagnosis::check_writable(args.output);
    } else {
      // The report goes to the current directory, under a name known once the program runs: the
      // directory must take it, which is found out before the program runs, not after.
      try {
        diagnosis::check_writable("tleak-report.json");
      } catch (const diagnosis::FileError& e) {
        const std::string reason = e.what();
        const auto colon = reason.rfind(": ");
        throw UsageError("cannot write the report in the current directory (" + std::filesystem::current_path().string() +
                         ")" + (colon == std::string::npos ? "" : reason.substr(colon)) + "; give --output FILE");
      }
    }
    if (!args.html.empty()) diagnosis::check_writable(args.html);
  } catch (const diagnosis::ReportError& e) {
    throw UsageError(e.what());
  } catch (const diagnosis::FileError& e) {
    throw UsageError(e.what());
  }
  int snapshots = 0;
  options.on_snapshot = [&](const diagnosis::Report& snap) {
    const std::string path = snapshot_file(args.output, snap.run.scenario, static_cast<int>(snap.run.program->pid),
                                           snap.run.program->snapshot.value_or("snapshot"), ++snapshots);
    try {
      diagnosis::write_file_atomically(path, diagnosis::report_file_text(snap));
      std::fprintf(stderr, "tleak: snapshot '%s' written to %s\n", snap.run.program->snapshot.value_or("").c_str(),
                   path.c_str());
    } catch (const diagnosis::FileError& e) {
      std::fprintf(stderr, "tleak: snapshot not written: %s\n", e.what());
    }
  };
  options.on_notice = [](const std::string& line) { std::fprintf(stderr, "tleak: %s\n", line.c_str()); };
  diagnosis::Report report;
  try {
    options.last_in_process = true;  // the report is written, then tleak exits
    report = diagnosis::run_program(options);
  } catch (const diagnosis::ProgramError& e) {
    throw UsageError(e.what());
  }
  // The program owns stdout: the report goes to a file (--output, or one named after the program),
  // the summary to stderr; --format puts either on stdout instead, after the program's own output.
  const diagnosis::ProgramInfo& program = *report.run.program;
  const std::string json = diagnosis::report_file_text(report);
  const std::string output =
      !args.output.empty() ? args.output : default_report_file(report.run.scenario, static_cast<int>(program.pid));
  try {
    diagnosis::write_file_atomically(output, json);
    if (!args.html.empty()) diagnosis::write_file_atomically(args.html, web::report_page(report));
  } catch (const diagnosis::FileError& e) {
    throw UsageError(e.what());
  }
  if (args.format.empty()) {
    std::cerr << diagnosis::render_text(report) << "report: " << output << "\n" << std::flush;
  } else {
    std::cout << (args.format == "json" ? json : diagnosis::render_text(report)) << std::flush;
  }
  if (program.exit_signal || program.exit_status.value_or(0) != 0) {
    std::fprintf(stderr, "tleak: the program %s; report written\n",
                 program.exit_signal ? ("was killed by " + diagnosis::signal_number_and_name(*program.exit_signal) +
                                        (program.stopped_by.empty() ? "" : " (--max-live)")).c_str()
                                     : ("exited with status " + std::to_string(*program.exit_status)).c_str());
  }
  const int verdict = exit_code_for(report, args.fail_on);
  if (verdict != kExitClean) return verdict;
  return program.exit_signal || program.exit_status.value_or(0) != 0 ? kExitProgramFailed : kExitClean;
}

// A directory of tleak's own, removed unless something is in it.
void remove_if_empty(const std::string& directory) {
  std::error_code ignored;
  std::filesystem::remove(directory, ignored);
}

}  // namespace

Command add_run_command(CommandLine& app) {
  Subcommand sub = app.add_subcommand(
      "run", "Run a scenario, or any program (tleak run [options] -- COMMAND ARGS...), under the tracker and "
             "report what leaks, grows or is retained");
  auto args = std::make_shared<RunArgs>();
  sub.option("scenario", args->scenario, "Scenario id (see tleak list); omit it with -- COMMAND");
  sub.option("--variant", args->variant,
             "leaky: the document's code as written (may not leak); fixed: the remedy; some scenarios "
             "have other remedies to compare (tleak list --format json)");
  sub.option("--mode", args->mode, "Execution mode (default: the scenario's own)")
      .one_of({"eager", "graph", "jit"});
  sub.option("--iterations", args->iterations, "Loop iterations (default: the scenario's)")
      .within(std::uint64_t{1}, std::uint64_t{1'000'000});
  sub.option("--scale", args->scale, "Multiplies tensor sizes (default 1; 0.25 under Valgrind)")
      .within(0.01, 100.0);
  sub.option("--stack-depth", args->stack_depth, "Frames kept per allocation stack")
      .within(0, 64);
  sub.option("--output,-o", args->output, "Also write the JSON report to FILE (atomically)");
  sub.option("--html", args->html, "Also write the report as a self-contained HTML page to FILE (atomically)");
  sub.option("--format", args->format, "What stdout gets: json (default without --output) or text")
      .one_of({"json", "text"});
  sub.option("--fail-on", args->fail_on, "Exit 1 when a site has this verdict")
      .one_of({"leak", "growth", "retained", "any"});
  sub.option("--threshold", args->thresholds,
             "Override a classifier threshold, name=value (repeatable; names as in the report)")
      .one_value_each_time();
  sub.flag("--no-track", args->no_track, "Run on the raw allocators (cost baseline; no sites)");
  sub.flag("--no-valgrind-annotations", args->no_valgrind_annotations,
           "Do not register pool blocks with memcheck (shows what it misses)");
  sub.flag("--valgrind", args->valgrind,
           "Run under Valgrind's memcheck and add memcheck's own figures to the report");
  sub.option("--sample-every", args->sample_every,
             "With -- COMMAND: sample live bytes this often until the program marks its own "
             "iterations (default 100ms)");
  sub.option("--max-live", args->max_live,
             "With -- COMMAND: stop the program, report written, once its live bytes pass SIZE (e.g. 2GiB)");
  sub.option("--focus", args->focus,
             "With -- COMMAND: files under this path prefix are your code, for site labels (default: "
             "every Python file outside the standard library and installed packages)");
  sub.option("--record", args->record,
             "With -- COMMAND: record the first process the command starts, itself or through others (a "
             "wrapper script, a launcher), that runs this program (a file name: python3, or a Python "
             "script's: train.py), not the command's own");
  sub.flag("--record-fork", args->record_fork,
           "With -- COMMAND: record the first copy of the command's process (with --record NAME, of a "
           "process running NAME) that it forks and that allocates (a DataLoader's or a multiprocessing "
           "pool's worker), from that allocation on");
  sub.option("--max-sites", args->max_sites,
             "With -- COMMAND: list at most N sites; every leak, growth and retained site is listed, "
             "the smaller bounded ones past N are added up in omitted_sites (default 1000)")
      .within(std::size_t{1}, std::size_t{10'000'000});
  sub.option("--snapshot-signal", args->snapshot_signal,
             "With -- COMMAND: the signal that, sent to tleak, writes a snapshot report (default USR2)");

  return [args, sub] {
    args->scale_given = sub.count("--scale") > 0;
    args->max_sites_given = sub.count("--max-sites") > 0;
    args->record_given = sub.count("--record") > 0;
    if (args->scale_given && !std::isfinite(args->scale)) throw UsageError("--scale: not a finite number");
    if (!trailing_command().empty()) return run_program_command(*args);
    if (args->scenario.empty()) {
      throw UsageError("run: name a scenario (tleak list) or a program after -- (tleak run -- COMMAND ARGS...)");
    }
    for (const std::string* option : {&args->sample_every, &args->max_live, &args->snapshot_signal, &args->focus}) {
      if (!option->empty() || args->max_sites_given || args->record_given || args->record_fork) {
        throw UsageError("run: --sample-every, --max-live, --max-sites, --snapshot-signal, --focus, --record and "
                         "--record-fork need -- COMMAND");
      }
    }
    // An option an untracked run cannot honour is refused, not silently ignored.
    if (args->no_track && (!args->fail_on.empty() || !args->thresholds.empty())) {
      throw UsageError("run: --no-track records no sites, so --fail-on and --threshold cannot apply");
    }
    const scenarios::Scenario& scenario = require_scenario(args->scenario);
    diagnosis::SessionOptions options = run_options(
        scenario, {args->variant, args->mode,
                   args->iterations != 0 ? std::optional(args->iterations) : std::nullopt,
                   args->scale_given ? std::optional(args->scale) : std::nullopt});
    if (args->no_track && !args->html.empty()) throw UsageError("run: --no-track records no sites, so there is no page to --html");
    try {
      // Refuse before a long run, not after.
      if (!args->output.empty()) diagnosis::check_writable(args->output);
      if (!args->html.empty()) diagnosis::check_writable(args->html);
    } catch (const diagnosis::FileError& e) {
      throw UsageError(e.what());
    }
    try {
      options.thresholds = diagnosis::thresholds_with_overrides(args->thresholds);
    } catch (const diagnosis::ReportError& e) {
      throw UsageError(e.what());
    }
    options.stack_depth = args->stack_depth;
    options.track = !args->no_track;
    options.valgrind_annotations = !args->no_valgrind_annotations;
    Progress progress;
    options.progress = [&progress](std::uint64_t done, std::uint64_t total) { progress(done, total); };

    diagnosis::Report report;
    if (args->valgrind) {
      // Memcheck writes into a directory only this user can enter (a predictable name in /tmp is
      // a link another user could plant); with --output the log is then copied next to it.
      std::string private_dir = (std::filesystem::temp_directory_path() / "tleak-memcheck-XXXXXX").string();
      if (mkdtemp(private_dir.data()) == nullptr) throw UsageError("--valgrind: cannot create a private temporary directory");
      const std::string log = private_dir + "/memcheck.log";
      // An interruption removes both (a run that ends keeps the log there, without --output).
      const diagnosis::RemovedOnInterrupt log_removed(log, diagnosis::RemovedOnInterrupt::Kind::kFile);
      const diagnosis::RemovedOnInterrupt dir_removed(private_dir, diagnosis::RemovedOnInterrupt::Kind::kDirectory);
      try {
        if (!args->output.empty()) diagnosis::check_writable(args->output + ".memcheck.log");
        report = diagnosis::run_under_memcheck(std::filesystem::read_symlink("/proc/self/exe").string(), child_arguments(*args), TLEAK_VALGRIND_SUPPRESSIONS, log);
        if (!args->output.empty()) {
          std::ifstream in(log, std::ios::binary);
          const std::string text((std::istreambuf_iterator<char>(in)), {});
          const std::string kept = args->output + ".memcheck.log";
          diagnosis::write_file_atomically(kept, text);
          for (std::string& note : report.notes) {
            if (const auto at = note.find(log); at != std::string::npos) note.replace(at, log.size(), kept);
          }
          std::error_code ec;
          std::filesystem::remove_all(private_dir, ec);
        }
      } catch (const diagnosis::MemcheckError& e) {
        remove_if_empty(private_dir);  // memcheck never ran; else its log, which the error names, stays
        throw UsageError(e.what());
      } catch (const diagnosis::FileError& e) {
        remove_if_empty(private_dir);
        throw UsageError(std::string("--valgrind: ") + e.what());
      }
    } else {
      report = diagnosis::run_workload(scenario.run, options);
    }
    const std::string json = diagnosis::report_file_text(report);
    if (!args->output.empty()) diagnosis::write_file_atomically(args->output, json);
    if (!args->html.empty()) diagnosis::write_file_atomically(args->html, web::report_page(report));
    const std::string format = !args->format.empty() ? args->format : (args->output.empty() ? "json" : "text");
    std::cout << (format == "json" ? json : diagnosis::render_text(report)) << std::flush;
    return exit_code_for(report, args->fail_on);
  };
}

}  // namespace tleak::cli
