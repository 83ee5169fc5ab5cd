// The built tleak as a user runs it, for the suites of process tests (TLEAK_BINARY is theirs), and
// what every refusal must look like: exit 2, nothing on stdout, one line on stderr naming it.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "process.h"

namespace tleak::testing {

inline ProcessResult tleak(const std::vector<std::string>& args) { return run_process(TLEAK_BINARY, args); }

inline void expect_refused(const ProcessResult& r, const std::string& message) {
  EXPECT_EQ(r.exit_code, 2) << message;
  EXPECT_EQ(r.out, "") << message;
  EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

}  // namespace tleak::testing
