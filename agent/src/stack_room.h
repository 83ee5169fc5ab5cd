// Whether the allocating thread's stack has room for the stack's walk: the agent's own
// (fast_unwind.h), or libunwind's for the stacks that one gives up on (a signal handler's among
// them), so the room is libunwind's. Where a return address is
// new to libunwind, its walk and the agent's recording after it took 5.1 to 6.1 KiB below malloc's
// frame (tests/programs/small_stack.c, by bisecting kUnwindStackRoom): a 16 KiB thread stack
// overflowed under tleak with 6,500 bytes used where plain ran to 8,500. With less room than
// kUnwindStackRoom left, the allocation is recorded without its stack instead (its bytes still
// counted, in the site "(no stack recorded)").
//
// The stack's bounds are read (pthread_getattr_np) only once a thread allocates more than 4 KiB
// deeper than at its first recorded allocation or free, and then on a stack of the agent's own,
// mapped for the call: that deep the thread may have less left than the call takes (it overflowed
// tests/programs/small_stack.c's from about 7,800 bytes used of 16 KiB). Reading them for every thread cost
// malloc-heavy threads 3.5% of their pairs per second afterwards (build/release/bench/agent_scaling,
// 4.17-4.21 M pairs/s against 4.30-4.37), for reasons in glibc not found. Known for the stacks
// pthread made, not for the main thread (thread_buffers.cc).
//
// A signal handler on the thread's alternate signal stack is judged against that stack, whose
// bounds the program gave sigaltstack (interposed, interpose.cc): such stacks are small (8 KiB is
// common, and the kernel's signal frame takes 3 KiB or more of it), and a handler that allocated
// there overflowed it under tleak (tests/programs/alt_signal_stack.c). A frame on any other stack
// (a coroutine's, made with makecontext or by hand) has room of an unknown size, maybe a few KiB
// where the program itself needs less than two: its stack is walked by the agent's own walk only,
// which takes little, up to the first frame that walk does not follow (the coroutine's entry,
// mostly); libunwind's, whose lazy binding alone takes the processor's whole register state
// (2.5 KiB with AVX-512), overflowed a 7 KiB coroutine stack that ran plain in 2
// (tests/programs/coroutine_stack.c).
#pragma once

#include <cstddef>
#include <cstdint>

#include "tleak/agent/protocol.h"

namespace tleak::agent {

// What an allocation's stack may be captured with.
enum class StackRoom {
  kNone,          // too near the end of its stack: recorded without its stack
  kFastWalkOnly,  // a stack of unknown size: the agent's own walk only, as far as it follows
  kFull,          // the agent's walk, and libunwind's where that one gives up
};

// How much deeper than its first recorded allocation a thread may go before its bounds are read.
inline constexpr std::uintptr_t kStackSlack = 4 * 1024;
// The stack the bounds are read on (with what pthread_getattr_np allocates, passed through).
inline constexpr std::size_t kSideStackBytes = 32 * 1024;

// Until this thread's bounds are read, a stand-in for its stack's low end: kStackSlack and
// kUnwindStackRoom below where it first recorded, so that going that deep asks for the bounds.
// 0 while unknown (every frame then has room).
extern __thread std::uintptr_t t_stack_low __attribute__((tls_model("initial-exec")));
// The stack's high end: the thread's descriptor, which the C library puts at the top of each stack
// it starts a thread on; the main thread's is set at start (note_main_stack). While 0, every frame
// counts as on the thread's stack.
extern __thread std::uintptr_t t_stack_high __attribute__((tls_model("initial-exec")));
// The thread's alternate signal stack as the program last set it (sigaltstack); size 0: none.
extern __thread std::uintptr_t t_alt_stack_low __attribute__((tls_model("initial-exec")));
extern __thread std::uintptr_t t_alt_stack_size __attribute__((tls_model("initial-exec")));

// After the program's successful sigaltstack(ss, ...) with ss not null: its new alternate stack.
void note_alternate_stack(const void* low, std::size_t size, bool disabled);

// When a thread gets its buffer (its first recorded allocation or free), with a frame of that call.
void note_stack_start(std::uintptr_t here);
// At the agent's start, on the main thread: its stack's bounds, from where the loader started it
// and the limit on its size.
void note_main_stack(std::uintptr_t loader_frame);
// The check's slow path: reads the bounds the first time (pthread_getattr_np, inside the agent:
// what it allocates passes through; it takes the thread descriptor's lock, so one made from a
// signal handler that interrupted pthread code holding it would wait), then judges `here`.
StackRoom stack_room_slow(std::uintptr_t here);

// A few subtractions and comparisons per allocation.
[[gnu::always_inline]] inline StackRoom stack_room(std::uintptr_t here) {
  if (here - t_alt_stack_low < t_alt_stack_size) {
    return here - t_alt_stack_low >= kUnwindStackRoom ? StackRoom::kFull : StackRoom::kNone;
  }
  if (here >= t_stack_low + kUnwindStackRoom && (t_stack_high == 0 || here < t_stack_high)) return StackRoom::kFull;
  return stack_room_slow(here);
}

}  // namespace tleak::agent
