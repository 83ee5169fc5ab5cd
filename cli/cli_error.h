// How the command line reports problems: one line on stderr and an exit code (DESIGN.md).
#pragma once

#include <stdexcept>
#include <string>

namespace tleak::cli {

inline constexpr int kExitClean = 0;
inline constexpr int kExitFinding = 1;  // a finding that --fail-on or a check asked to fail on
inline constexpr int kExitUsage = 2;    // bad usage or bad input
inline constexpr int kExitProgramFailed = 3;  // tleak run -- COMMAND: the program failed or was killed

// Thrown by commands for bad usage or input; main prints "tleak: <message>" and exits 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace tleak::cli
