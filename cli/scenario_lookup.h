#pragma once

#include <string>
#include <vector>

#include "tleak/scenarios/scenario.h"

namespace tleak::cli {

// The scenario with this id; throws UsageError listing the known ids otherwise.
const scenarios::Scenario& require_scenario(const std::string& id);
std::string join(const std::vector<std::string>& items, const char* separator);

}  // namespace tleak::cli
