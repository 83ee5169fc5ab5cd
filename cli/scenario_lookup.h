#pragma once

#include <string>
#include <vector>

#include "tleak/diagnosis/session.h"
#include "tleak/scenarios/scenario.h"

namespace tleak::cli {

// The scenario with this id; throws UsageError listing the known ids otherwise.
const scenarios::Scenario& require_scenario(const std::string& id);
std::string join(const std::vector<std::string>& items, const char* separator);
// Options to run `scenario` as `tleak run` would by default; throws UsageError for a mode it does
// not support. An empty mode means the scenario's own.
diagnosis::SessionOptions session_options(const scenarios::Scenario& scenario, const std::string& variant,
                                          const std::string& mode);

}  // namespace tleak::cli
