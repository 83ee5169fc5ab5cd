#include "scenario_lookup.h"

#include <stdexcept>

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

diagnosis::SessionOptions run_options(const scenarios::Scenario& scenario, const scenarios::RunChoice& choice) {
  try {
    return scenarios::session_options(scenario, choice);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

}  // namespace tleak::cli
