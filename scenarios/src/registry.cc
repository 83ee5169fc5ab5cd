#include <algorithm>
#include <stdexcept>

#include "scenario_groups.h"
#include "tleak/detail/valgrind_annotations.h"
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
    add_beyond_serving_scenarios(all);
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

diagnosis::SessionOptions session_options(const Scenario& scenario, const RunChoice& choice) {
  const std::string mode = choice.mode.empty() ? scenario.modes.front() : choice.mode;
  if (std::find(scenario.modes.begin(), scenario.modes.end(), mode) == scenario.modes.end()) {
    std::string supported;
    for (const std::string& m : scenario.modes) supported += (supported.empty() ? "" : ", ") + m;
    throw std::invalid_argument("scenario '" + scenario.id + "' does not run in mode '" + mode +
                                "' (it supports: " + supported + ")");
  }
  if (!has_variant(scenario, choice.variant)) {
    throw std::invalid_argument("scenario '" + scenario.id + "' has no variant '" + choice.variant + "' (it has: " +
                                variant_list(scenario) + ")");
  }
  diagnosis::SessionOptions options;
  options.scenario = scenario.id;
  options.params.variant = choice.variant;
  options.params.mode = mode;
  options.params.iterations = choice.iterations.value_or(scenario.default_iterations);
  options.params.scale = choice.scale.value_or(1.0);
  if (scenario.configure != nullptr) scenario.configure(choice.variant, options);
  if (valgrind::running_on_valgrind()) {
    // memcheck runs programs some 20-50 times slower: smaller defaults, said in the report.
    if (!choice.scale) options.params.scale = 0.25;
    if (!choice.iterations) options.params.iterations = std::min<std::uint64_t>(options.params.iterations, 10);
    options.params.under_valgrind = true;
    options.device_capacity = std::size_t{128} << 20;  // a smaller reservation for memcheck to shadow
    options.notes.push_back("under Valgrind: scale " + std::to_string(options.params.scale) + ", " +
                            std::to_string(options.params.iterations) + " iterations");
  }
  return options;
}

}  // namespace tleak::scenarios
