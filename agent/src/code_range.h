// The code of one loaded object: where an address's function lives, told without a lock by the
// hot paths (which object defines the program's malloc; the agent's own frames in a stack).
#pragma once

#include <cstdint>

struct dl_phdr_info;

namespace tleak::agent {

struct CodeRange {
  std::uintptr_t start = 0;  // empty until found
  std::uintptr_t end = 0;
  bool is_c_library = false;  // the object is libc.so.*
  bool holds(const void* address) const {
    const auto at = reinterpret_cast<std::uintptr_t>(address);
    return at >= start && at < end;
  }
};

// From the first to the last executable segment of the loaded object holding `address` (empty if
// none does). Calls dl_iterate_phdr, which takes the loader's lock: at start-up, not per call.
CodeRange code_range_of(const void* address);

// Whether one of the object's loaded segments (dl_iterate_phdr's `info`) holds `address`.
bool object_holds(const dl_phdr_info* info, std::uintptr_t address);

}  // namespace tleak::agent
