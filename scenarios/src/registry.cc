#include <algorithm>

#include "scenario_groups.h"
#include "tleak/scenarios/scenario.h"

namespace tleak::scenarios {

const std::vector<Scenario>& all_scenarios() {
  // Built on first use, in one place, so no registration depends on static initialisation order.
  static const std::vector<Scenario> catalogue = [] {
    std::vector<Scenario> all;
    add_xla_scenarios(all);
    add_function_scenarios(all);
    add_graph_loop_scenarios(all);
    add_prediction_scenarios(all);
    add_valgrind_doc_scenarios(all);
    add_beyond_scenarios(all);
    add_basic_loops(all);
    return all;
  }();
  return catalogue;
}

const Scenario* find_scenario(std::string_view id) {
  const auto& all = all_scenarios();
  const auto it = std::find_if(all.begin(), all.end(), [&](const Scenario& s) { return s.id == id; });
  return it == all.end() ? nullptr : &*it;
}

}  // namespace tleak::scenarios
