#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <exception>
#include <map>
#include <string>

#include "cli_error.h"
#include "commands.h"
#include "memory_handoff.h"
#include "program_args.h"
#include "tleak/allocator_error.h"
#include "tleak/diagnosis/interruption.h"

namespace {

// SIGINT/SIGTERM: pass the signal to the child tleak waits for, remove the files that exist only
// while tleak works (the report being written, the child's), then end as the signal asks. (A
// program run handles these itself: its report is still written.)
void on_interrupt(int signal) {
  if (const pid_t child = tleak::diagnosis::waited_child(); child > 0) kill(child, signal);
  tleak::diagnosis::remove_registered_files();
  ::signal(signal, SIG_DFL);
  raise(signal);
}

// An error line as the terminal gets it: one line, control characters (from a file name, a
// command's argument) shown as '?', and at most 1,000 characters however long what it quotes.
std::string printable(const std::string& message) {
  std::string out;
  for (const char c : message.substr(0, 1000)) out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  if (message.size() > 1000) out += "...";
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  for (const int s : {SIGINT, SIGTERM, SIGHUP}) std::signal(s, on_interrupt);
  using namespace tleak::cli;
  CommandLine app("tleak: memory-leak diagnosis for tensor workloads", "tleak", TLEAK_VERSION);
  std::map<std::string, Command> commands;
  for (const auto make : {add_list_command, add_explain_command, add_run_command, add_diff_command, add_check_command,
                          add_export_command, add_view_command}) {
    Command command = make(app);
    commands[app.subcommand_names().back()] = std::move(command);
  }

  // `tleak run [options] -- COMMAND ARGS...`: the command is not tleak's to parse.
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) != "--") continue;
    trailing_command().assign(argv + i + 1, argv + argc);
    argc = i;
    if (trailing_command().empty()) {
      std::fprintf(stderr, "tleak: nothing after --; expected a command to run (tleak run -- COMMAND ARGS...)\n");
      return kExitUsage;
    }
    break;
  }

  // CLI11 would only say a subcommand is required; name the word that is not one.
  if (argc > 1 && argv[1][0] != '-' && commands.count(argv[1]) == 0) {
    std::string names;
    for (const std::string& name : app.subcommand_names()) names += (names.empty() ? "" : ", ") + name;
    std::fprintf(stderr, "tleak: unknown command '%s'; commands: %s\n", printable(argv[1]).c_str(), names.c_str());
    return kExitUsage;
  }
  try {
    const CommandLine::Parsed parsed = app.parse(argc, argv);
    if (parsed.exit_code) return *parsed.exit_code;
    if (!trailing_command().empty() && parsed.subcommand != "run") {
      throw UsageError(parsed.subcommand + " takes no command after --; only run does");
    }
    const int code = commands.at(parsed.subcommand)();
    // Data that never reached stdout (a full disk, a closed pipe) is a failure, not a success.
    std::cout.flush();
    if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout)) {
      std::fprintf(stderr, "tleak: cannot write to standard output: %s\n", std::strerror(errno));
      return kExitUsage;
    }
    // A program's run may leave hundreds of megabytes to free (memory_handoff.h).
    if (parsed.subcommand == "run" || parsed.subcommand == "check") {
      std::fflush(stderr);
      hand_memory_to_releaser();
    }
    return code;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "tleak: %s\n", printable(e.what()).c_str());
    return kExitUsage;
  } catch (const tleak::AllocatorError& e) {
    std::fprintf(stderr, "tleak: allocator error (%s): %s\n", tleak::to_string(e.kind()), printable(e.what()).c_str());
    return kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tleak: %s\n", printable(e.what()).c_str());
    return kExitUsage;
  }
}
