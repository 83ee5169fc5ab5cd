// Counts calls to the global operator new in a test binary that links new_counter.cc, so a test
// can prove that a hot path does not allocate.
#pragma once

#include <cstdint>

namespace tleak::testing {
std::uint64_t operator_new_calls();
}
