// `tleak run -- COMMAND`: starts the program with the agent preloaded, reads the agent's stream
// while it runs (AgentSource), answers the agent's exit scan with the live list, and classifies
// what it saw with the same engine and report as a scenario.
#pragma once

#include <csignal>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <optional>
#include <string>
#include <vector>

#include "tleak/diagnosis/classifier.h"
#include "tleak/diagnosis/report.h"
#include "tleak/diagnosis/report_builder.h"

namespace tleak::diagnosis {

// The program could not be started (not found, not executable, statically linked): one line.
class ProgramError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ProgramOptions {
  std::vector<std::string> command;  // argv; command[0] searched in PATH like a shell does
  std::string agent_path;            // libtleak_preload.so
  int stack_depth = 12;
  double sample_seconds = 0.1;       // the time clock, until the program marks its own iterations
  // --sample-every's range, which a report's run.program.sample_seconds is held to when read back.
  static constexpr double kMinSampleSeconds = 0.001, kMaxSampleSeconds = 3600;
  // The two bounds above, said in messages.
  static constexpr const char* kSampleRangeWords = "1 ms to 1 hour";
  std::int64_t max_live_bytes = 0;   // stop the program past this many live bytes; 0: no limit
  int snapshot_signal = SIGUSR2;     // sent to tleak: a snapshot of the program's live heap
  ClassifierOptions thresholds;
  std::string python_path;  // appended to the program's PYTHONPATH (the marks module's directory)
  std::string focus;  // path prefix of the user's code, for site labels (default: not a library)
  // --record NAME: record the first process the command starts (itself, or through others) that
  // runs NAME (its executable's or command line's first word's file name, or a Python process's
  // script or -m module), not the command's own; empty: the command's.
  std::string record;
  // --record-fork: record instead the first copy of the command's process (with `record`, of a
  // process running NAME) that it forks and that allocates, from that allocation on (a
  // DataLoader's or a pool's worker).
  bool record_fork = false;
  // Either: tleak records another process than the command's own, found as it starts.
  bool records_another() const { return !record.empty() || record_fork; }
  std::size_t max_sites = kDefaultMaxSites;  // sites listed in a report (bounded ones past it added up)
  // A snapshot's report, as the program asked for it (tleak_snapshot) or the signal did.
  std::function<void(const Report&)> on_snapshot;
  // A line for the user while the program runs (--record: the command ended a while ago, and tleak
  // still waits for a process it left running).
  std::function<void(const std::string&)> on_notice;
  // Nothing but the process's exit follows the report (`tleak run -- COMMAND`): the run's working
  // memory is left for the exit to give back (left_for_exit.h), not freed piece by piece.
  bool last_in_process = false;
};

// The path the command would run, and whether it is a "#!" script (its interpreter then runs it),
// or a ProgramError naming why it cannot run under the agent (with `record_another`, --record, why
// it could not start one that does).
struct ResolvedCommand {
  std::string path;
  bool is_script = false;
};
ResolvedCommand resolve_command(const std::string& name, bool record_another = false);

// Whether `name` may be --record's NAME (a file name, of at most agent::kMaxRecordNameBytes bytes);
// if not, what it must be, for the caller's message ("a program's file name (python3, ...)").
std::optional<std::string> record_name_problem(const std::string& name);

Report run_program(const ProgramOptions& options);

}  // namespace tleak::diagnosis
