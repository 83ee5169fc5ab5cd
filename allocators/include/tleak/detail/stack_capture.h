// Return addresses of the calling thread's stack, captured with libunwind's unw_backtrace, which
// caches unwind info per address (about 100 ns for 12 frames; the unw_step loop costs ~8 us and
// must never be used per allocation). No allocation, no lock.
#pragma once

#include <cstdint>

// libunwind's, declared here so that includers need not take its macros.
extern "C" int unw_backtrace(void** buffer, int size);

namespace tleak::detail {

inline constexpr int kMaxStackDepth = 64;

// Writes up to max_depth return addresses into out, innermost first, starting with the caller of
// the function `skip` levels above capture_stack's caller (skip = 0: the caller's own caller).
// Returns how many were written.
[[gnu::noinline]] int capture_stack(std::uintptr_t* out, int max_depth, int skip);

// Return addresses from the calling function's own frame on, up to `count` of them, innermost
// first. Always inlined, so the walk starts in the caller itself: a function that allocates on its
// caller's behalf (an interposed malloc) skips only its own frame, where capture_stack's callers
// also walk capture_stack's frame and their own helpers'. libunwind only: not for code that may run
// under Valgrind or ThreadSanitizer (capture_stack picks the unwinder those accept).
[[gnu::always_inline]] inline int capture_stack_here(void** out, int count) { return unw_backtrace(out, count); }

}  // namespace tleak::detail
