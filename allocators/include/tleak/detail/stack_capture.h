// Return addresses of the calling thread's stack, captured with libunwind's unw_backtrace, which
// caches unwind info per address (about 100 ns for 12 frames; the unw_step loop costs ~8 us and
// must never be used per allocation). No allocation, no lock.
#pragma once

#include <cstdint>

namespace tleak::detail {

inline constexpr int kMaxStackDepth = 64;

// Writes up to max_depth return addresses into out, innermost first, starting with the caller of
// the function `skip` levels above capture_stack's caller (skip = 0: the caller's own caller).
// Returns how many were written.
[[gnu::noinline]] int capture_stack(std::uintptr_t* out, int max_depth, int skip);

}  // namespace tleak::detail
