// The catalogue of built-in workloads `tleak run` knows by name. Each scenario is a plain function
// of a WorkloadContext: it allocates through the context's allocators, reports ops and uses, and
// marks iterations. It never tells the engine what it expects to be found.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tleak/diagnosis/workload.h"

namespace tleak::scenarios {

struct Scenario {
  std::string id;
  std::string document;  // the seed document it reproduces, or "tleak" for tleak's own
  std::string summary;   // one line for `tleak list`
  std::vector<std::string> modes;  // supported; the first is the default
  std::uint64_t default_iterations = 20;
  // For `tleak explain`: what the document claims, what tleak measures, and the fix.
  std::string claim;
  std::string measures;
  std::string fix;
  diagnosis::Workload run;
};

const std::vector<Scenario>& all_scenarios();
// nullptr when no scenario has this id.
const Scenario* find_scenario(std::string_view id);

}  // namespace tleak::scenarios
