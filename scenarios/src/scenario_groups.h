// One function per scenario file, each appending its scenarios to the catalogue.
#pragma once

#include <vector>

#include "tleak/scenarios/scenario.h"

namespace tleak::scenarios {

void add_basic_loops(std::vector<Scenario>& out);
void add_xla_scenarios(std::vector<Scenario>& out);
void add_function_scenarios(std::vector<Scenario>& out);
void add_graph_loop_scenarios(std::vector<Scenario>& out);
void add_prediction_scenarios(std::vector<Scenario>& out);
void add_valgrind_doc_scenarios(std::vector<Scenario>& out);
void add_beyond_scenarios(std::vector<Scenario>& out);
void add_beyond_serving_scenarios(std::vector<Scenario>& out);

}  // namespace tleak::scenarios
