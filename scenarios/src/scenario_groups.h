// One function per scenario file, each appending its scenarios to the catalogue.
#pragma once

#include <vector>

#include "tleak/scenarios/scenario.h"

namespace tleak::scenarios {

void add_basic_loops(std::vector<Scenario>& out);

}  // namespace tleak::scenarios
