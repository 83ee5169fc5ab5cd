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
  CLI::App app("tleak: memory-leak diagnosis for tensor workloads", "tleak");
  app.require_subcommand(1);
  app.set_version_flag("--version", TLEAK_VERSION);
  std::map<CLI::App*, Command> commands;
  const auto add = [&](Command (*make)(CLI::App&)) {
    Command command = make(app);
    commands[app.get_subcommands({}).back()] = std::move(command);
  };
  add(add_list_command);
  add(add_explain_command);
  add(add_run_command);
  add(add_diff_command);
  add(add_check_command);
  add(add_export_command);
  add(add_view_command);

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
  std::string names;
  bool known = false;
  for (const CLI::App* sub : app.get_subcommands({})) {
    names += (names.empty() ? "" : ", ") + sub->get_name();
    known = known || (argc > 1 && sub->get_name() == argv[1]);
  }
  if (argc > 1 && argv[1][0] != '-' && !known) {
    std::fprintf(stderr, "tleak: unknown command '%s'; commands: %s\n", printable(argv[1]).c_str(), names.c_str());
    return kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "tleak: %s (see tleak --help)\n", printable(e.what()).c_str());
    return kExitUsage;
  }
  try {
    for (auto& [sub, command] : commands) {
      if (!sub->parsed()) continue;
      if (!trailing_command().empty() && sub->get_name() != "run") {
        throw UsageError(sub->get_name() + " takes no command after --; only run does");
      }
      const int code = command();
      // Data that never reached stdout (a full disk, a closed pipe) is a failure, not a success.
      std::cout.flush();
      if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout)) {
        std::fprintf(stderr, "tleak: cannot write to standard output: %s\n", std::strerror(errno));
        return kExitUsage;
      }
      return code;
    }
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
  return kExitUsage;
}
