// Runs a program as a separate process and captures what it printed, for end-to-end tests that
// treat tleak as a user would.
#pragma once

#include <string>
#include <vector>

namespace tleak::testing {

struct ProcessResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs `program` with `args` (no shell), waits, and returns its exit code and output.
ProcessResult run_process(const std::string& program, const std::vector<std::string>& args);

}  // namespace tleak::testing
