// --fail-on and --max-increase, shared by diff and check.
#pragma once

#include <string>
#include <vector>

#include "cli_error.h"
#include "tleak/diagnosis/diff.h"

namespace tleak::cli {

inline diagnosis::FailPolicy policy_from(const std::vector<std::string>& fail_on, const std::string& max_increase) {
  try {
    return diagnosis::fail_policy(fail_on, max_increase);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--max-increase: ") + e.what());
  }
}

}  // namespace tleak::cli
