// libunwind's walk, for the stacks the agent's own gives up on (fast_unwind.h).
//
// unw_backtrace keeps a cache of its own per thread: how to step from each return address it has
// met (libunwind's src/x86_64/Gtrace.c), which nothing outside libunwind can empty. After the
// program unloads an object, another one loaded at its address had its frames stepped with the old
// one's rules: a plugin function called from a signal handler, whose kernel signal frame hands the
// stack to libunwind, had every other allocation given no caller (tests/programs/plugin_swap.c
// "signal"). So once the program has unloaded an object, libunwind's walk goes by unw_step instead:
// its cache of rules is dropped by unw_flush_cache, called after each unload. Not unw_backtrace
// first with a check of its addresses against the unloaded objects': its walk reads the stack
// without validation where a cached rule says, and a stale rule can make that read fault.
// (A stack the agent's own walk follows, nearly every one, never gets here.)
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace tleak::agent {

// Room in a thread's scratch (thread_buffers.h) for libunwind's context and cursor: kept there, not
// in the allocating function's frame, where a small stack has little to spare (stack_room.h).
inline constexpr std::size_t kLibunwindStateBytes = 4096;

// Set before the first unload; from then on libunwind's walks go by unw_step.
extern std::atomic<bool> g_walk_by_steps;

// Before the program unloads an object (dlclose).
void libunwind_before_unload();
// After it did: libunwind's rules for every address are found again.
void libunwind_after_unload();

// Return addresses of the calling function's stack, its own first (as unw_backtrace gives them
// to its caller), up to `count`; `state` is kLibunwindStateBytes of the thread's scratch.
[[gnu::noinline]] int walk_by_steps(unsigned char* state, void** out, int count);

// The stack pointer of each frame of the calling function's stack, its caller's first, up to the
// outermost; their count, or -1 when the walk did not reach the stack's end within `count` frames.
// `state` as for walk_by_steps.
[[gnu::noinline]] int stack_pointers_by_steps(unsigned char* state, std::uintptr_t* out, int count);

}  // namespace tleak::agent
