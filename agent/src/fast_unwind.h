// The agent's own walk of an allocating thread's stack, for the stacks it can follow, with
// libunwind's for the rest.
//
// libunwind's unw_backtrace cost the PyTorch loop about 200 ms (13.5 million frames over its 1.12
// million allocations): a copy of the registers with the floating-point environment, a cursor of
// a few hundred bytes, and for each frame a lookup in a per-thread cache. This walk keeps one rule
// per return address (frame_rules.h: the CFA from rsp or rbp, rbp kept or saved at an offset) in
// a table all threads share without a lock, in front of it a cache of the thread's own
// (UnwindMemo), and follows each rule with two loads from the stack. A frame whose rule it does
// not follow (the kernel's signal frame, a CFA given by a DWARF expression, code without unwind
// info) makes it give up, and the caller asks libunwind for the whole stack instead; elsewhere
// both give the same addresses (TLEAK_AGENT_CHECK_UNWIND, below, counts where they would not).
// Rules are forgotten when an object is unloaded (another object loaded at the same address got
// the old one's frames otherwise, tests/programs/plugin_swap.c); libunwind's walks after an unload
// go by steps, whose cache can be emptied (libunwind_walk.h).
#pragma once

#include <cstdint>

#include "tleak/agent/protocol.h"

namespace tleak::agent {

// A thread's own cache of the rules it used last: by depth (the next allocation's stack mostly
// shares the previous one's frames), then by address in 1,024 slots; the shared table's 4 MB
// missed the processor's caches (half of the walk's time without these). How many frames each
// level answers: the profile build's counts (step_profile.h). No member initializers: it lives in
// the thread's buffer, mapped zeroed, and a thread that never walks never touches its 17 KB.
// All zeros is a valid empty memo of generation 0 (no return address is 1, so no pc is 0).
struct UnwindMemo {
  static constexpr int kFrames =
      static_cast<int>(kMaxFrames) + 1;  // the interposed function's, then the stack's
  static constexpr int kRecentBits = 10;
  struct Frame {
    std::uintptr_t pc;
    std::uint64_t rule;
  };
  std::uint64_t generation;
  Frame by_depth[kFrames];
  Frame recent[1 << kRecentBits];

  // Empty, for rules of `now` (after an unload).
  void forget(std::uint64_t now) {
    for (Frame& f : by_depth) f = {0, 0};
    for (Frame& f : recent) f = {0, 0};
    generation = now;
  }
};

// Maps the rule table (call once, at the start of a tracked process; without it every walk gives
// up).
void fast_unwind_init();

// Before an object is unloaded: the rules of its addresses must not outlive it.
void fast_unwind_forget_rules();

// Checking this walk against libunwind's (TLEAK_AGENT_CHECK_UNWIND=1 in the program's
// environment, for tests): each stack walked both ways, the differences counted and printed to
// the program's stderr at its exit.
inline constexpr const char* kEnvCheckUnwind = "TLEAK_AGENT_CHECK_UNWIND";
extern bool g_check_unwind;
void check_unwind(void* const* ours, int our_count, void* const* theirs, int their_count);
void report_unwind_check();

}  // namespace tleak::agent

// The return addresses of the caller's stack, innermost first, its own (the return address of
// this call) included, as unw_backtrace(out, max) would give them; -1 - n when the walk met a frame
// it does not follow after n of them (then `out` holds those n: all there is of a coroutine's
// stack, mostly, whose entry's return address leads nowhere the tables describe). Never allocates, never takes a lock except the
// loader's, once for each return address it has not met before.
// `memo` is the calling thread's own.
extern "C" int tleak_fast_backtrace(void** out, int max, tleak::agent::UnwindMemo* memo);
