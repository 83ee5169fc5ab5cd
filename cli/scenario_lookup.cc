#include "scenario_lookup.h"

#include <algorithm>

#include "cli_error.h"

namespace tleak::cli {

std::string join(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

const scenarios::Scenario& require_scenario(const std::string& id) {
  if (const scenarios::Scenario* s = scenarios::find_scenario(id)) return *s;
  std::vector<std::string> known;
  for (const auto& s : scenarios::all_scenarios()) known.push_back(s.id);
  throw UsageError("unknown scenario '" + id + "'; known scenarios: " + join(known, ", "));
}

diagnosis::SessionOptions session_options(const scenarios::Scenario& scenario, const std::string& variant,
                                          const std::string& mode) {
  const std::string chosen = mode.empty() ? scenario.modes.front() : mode;
  if (std::find(scenario.modes.begin(), scenario.modes.end(), chosen) == scenario.modes.end()) {
    throw UsageError("scenario '" + scenario.id + "' does not run in mode '" + chosen +
                     "' (it supports: " + join(scenario.modes, ", ") + ")");
  }
  diagnosis::SessionOptions options;
  options.scenario = scenario.id;
  options.params.variant = variant;
  options.params.mode = chosen;
  options.params.iterations = scenario.default_iterations;
  return options;
}

}  // namespace tleak::cli
