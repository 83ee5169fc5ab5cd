#pragma once

#include <string>
#include <vector>

#include "tleak/scenarios/scenario.h"

namespace tleak::cli {

// The scenario with this id; throws UsageError listing the known ids otherwise.
const scenarios::Scenario& require_scenario(const std::string& id);
std::string join(const std::vector<std::string>& items, const char* separator);
// scenarios::session_options, with a mode the scenario does not run in as a UsageError.
diagnosis::SessionOptions run_options(const scenarios::Scenario& scenario, const scenarios::RunChoice& choice);

}  // namespace tleak::cli
