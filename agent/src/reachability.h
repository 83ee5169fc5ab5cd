// The exit scan that tells a true leak from memory a program simply did not free: which of the
// live blocks can still be reached, the way memcheck and LeakSanitizer decide it. Roots are every
// readable, writable private mapping that is not heap (data and bss of every module, thread
// stacks, anonymous mappings such as an interpreter's own arenas), minus the agent's own tables;
// the calling thread's stack only from its current depth up, with its registers spilled there.
// Then a flood fill: every aligned word that points into a live block (interior pointers count)
// makes that block reachable, and its contents are scanned in turn.
#pragma once

#include <cstdint>

namespace tleak::agent {

struct LiveBlock {
  std::uint64_t address;
  std::uint64_t size;
};

// `blocks` sorted by address. Sets bit i of `reachable` (zeroed by the caller, ceil(n / 64) words)
// when block i is reachable. `work` has room for n indices. Returns the root bytes scanned.
std::uint64_t scan_reachability(const LiveBlock* blocks, std::uint64_t n, std::uint64_t* reachable,
                                std::uint32_t* work);

}  // namespace tleak::agent
