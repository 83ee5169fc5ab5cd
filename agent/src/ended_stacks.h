// Where the stacks of threads that have ended stop holding anything. The C library keeps the stack
// of an ended thread mapped, for the next thread it starts (up to 40 MiB of them), and clears only
// what lies more than 16 KiB below where the thread left off: the exit scan, which reads every
// private writable mapping, read the rest whole, and the addresses a thread's dead frames still
// held kept its lost blocks "reachable" (tests/programs/ended_thread_stacks.c; memcheck, which
// stops reading a stack below its stack pointer, called them lost, as LeakSanitizer does).
//
// As a thread ends, the agent notes where its stack begins to be live for good: the stack pointer
// of the C library's frame that started the thread (the frame that runs the thread-specific data
// destructors, this one's among them). What lies above (that frame, the thread's static TLS and its
// descriptor, which holds the result of a thread not yet joined) is read as memcheck reads it.
#pragma once

#include <cstdint>

namespace tleak::agent {

struct EndedStack {
  std::uint64_t thread_pointer;  // the ended thread's descriptor, at the top of its stack
  std::uint64_t live_from;       // its stack is read from here up
};

// How many ended threads are remembered: one per stack (a stack the C library gave to a new thread
// that ended too is noted again in the same entry); one that finds its entry taken by another
// stack's replaces it, and the other's stack is then read whole, as before.
inline constexpr int kMaxEndedStacks = 1024;

// Called as the calling thread ends (from its thread-specific data destructor), with
// kLibunwindStateBytes of its scratch: finds the frame that started it by libunwind's walk, and
// notes nothing if the walk does not reach the end of the stack.
void note_thread_ended(unsigned char* libunwind_state);

// The stacks noted so far, into `out` (room for kMaxEndedStacks); their count, or 0 when a thread
// is noting its own at this moment (one the parent holds stopped there would never let go).
int ended_stacks(EndedStack* out);

}  // namespace tleak::agent
