// This process's command line, as /proc/self/cmdline gives it, and what a CPython process runs by
// it (tleak/agent/python_files.h, python_main). Read once, at start-up, on the only thread, into
// static room (not a stack the program may have made small); every part of the agent that asks
// (the report's name for a Python program, --record NAME, the names of processes not recorded)
// reads the same copy.
#pragma once

#include <string_view>

#include "tleak/agent/python_files.h"

namespace tleak::agent {

struct CommandLine {
  std::string_view words;  // each argument followed by a NUL; empty if it cannot be read
  bool cut = false;        // it filled the room: later arguments are missing
};
const CommandLine& this_command_line();

// What this process runs if `executable` is CPython's (python_main), with what a cut command line
// cannot tell left out: a script or module whose name runs to the cut (it may be cut itself), and
// standard input (a script may have come later: kNone then). Any other program: kNone, no target,
// and its command line is not read.
PythonMain this_python_main(std::string_view executable);

}  // namespace tleak::agent
