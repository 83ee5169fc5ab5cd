// Where the exit scan begins to read another thread's stack: what lies below a thread's stack
// pointer is dead frames, whose stale words had kept lost blocks "reachable" where memcheck, which
// reads a stack from its stack pointer up, called them lost (tests/programs/stale_stack_words.c).
#pragma once

#include <cstdint>

#include "ended_stacks.h"
#include "tleak/agent/protocol.h"

namespace tleak::agent {

// The bytes below the stack pointer that a leaf function may use without moving it (the x86-64
// ABI's red zone): read too.
inline constexpr std::uint64_t kRedZoneBytes = 128;

// Where the mapping [start, end) begins to be read, given the `count` threads whose stack pointers
// the parent read (`stacks`) and the scanning thread's own stack pointer: from the one read
// thread's stack pointer less the red zone, when the mapping is that thread's own stack (the main
// thread's [stack], `main_stack`, or the one its thread pointer lies in: the C library puts its
// thread descriptor at the top of each stack it makes); else `start`, all of it. A mapping that
// holds more than one thread's stack pointer, the scanning thread's (read from its own point), or a
// stack the program made and placed its own way (coroutines, a pool of stacks) is read whole.
inline std::uintptr_t other_thread_stack_floor(const ThreadStack* stacks, std::uint64_t count,
                                               std::uintptr_t own_stack_pointer, std::uintptr_t start,
                                               std::uintptr_t end, bool main_stack) {
  const ThreadStack* only = nullptr;
  for (std::uint64_t k = 0; k < count; ++k) {
    if (stacks[k].stack_pointer < start || stacks[k].stack_pointer >= end) continue;
    if (only != nullptr) return start;
    only = &stacks[k];
  }
  if (only == nullptr || (own_stack_pointer >= start && own_stack_pointer < end)) return start;
  if (!main_stack && (only->thread_pointer < start || only->thread_pointer >= end)) return start;
  return only->stack_pointer - start > kRedZoneBytes ? (only->stack_pointer - kRedZoneBytes) & ~std::uintptr_t{7}
                                                     : start;
}

// How far below the top of its stack the C library puts a thread's descriptor (its size, about
// 2.3 KiB, and its alignment): an ended thread's entry counts for a mapping only where the
// descriptor lies this near its end, as on a stack the library made.
inline constexpr std::uint64_t kDescriptorRoom = 16 << 10;

// Where the mapping [start, end) begins to be read when it may be the stack of a thread that ended
// (ended_stacks.h), given every other living thread's stack pointer (`living`: all of them,
// kEveryThreadRead) and the scanning thread's own: from where the ended thread left off, when
// exactly one ended thread's descriptor lies at the mapping's top and no living thread's stack
// pointer lies in it (a stack the library gave to a new thread is that thread's, read from its
// own stack pointer); else `start`, all of it.
inline std::uintptr_t ended_thread_stack_floor(const EndedStack* ended, int ended_count, const ThreadStack* living,
                                               std::uint64_t living_count, std::uintptr_t own_stack_pointer,
                                               std::uintptr_t start, std::uintptr_t end) {
  if (own_stack_pointer >= start && own_stack_pointer < end) return start;
  for (std::uint64_t k = 0; k < living_count; ++k) {
    if (living[k].stack_pointer >= start && living[k].stack_pointer < end) return start;
  }
  const EndedStack* only = nullptr;
  for (int k = 0; k < ended_count; ++k) {
    if (ended[k].thread_pointer < start || ended[k].thread_pointer >= end) continue;
    if (only != nullptr) return start;
    only = &ended[k];
  }
  if (only == nullptr || end - only->thread_pointer > kDescriptorRoom || only->live_from < start) return start;
  return only->live_from;
}

}  // namespace tleak::agent
