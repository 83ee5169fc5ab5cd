// When and where a run happened, as every report's `run` section records it.
#pragma once

#include <string>

namespace tleak::diagnosis {

std::string utc_now();    // "2026-11-22T02:22:57Z"
std::string host_name();  // "unknown" when the system does not say

}  // namespace tleak::diagnosis
