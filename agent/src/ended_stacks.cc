#include "ended_stacks.h"

#include <errno.h>
#include <pthread.h>

#include <atomic>

#include "libunwind_walk.h"

namespace tleak::agent {
namespace {

EndedStack g_ended[kMaxEndedStacks];
std::atomic<bool> g_writing{false};

}  // namespace

void note_thread_ended(unsigned char* libunwind_state) {
  // The frames from here out: ours, the C library's destructor loop, the frame that started the
  // thread, and the system call's that made it, outermost. The third from the outside is the one
  // whose stack pointer is wanted: everything below it is the thread's dead frames.
  constexpr int kMaxSteps = 64;
  std::uintptr_t stack_pointers[kMaxSteps];
  const int saved_errno = errno;
  const int depth = stack_pointers_by_steps(libunwind_state, stack_pointers, kMaxSteps);
  errno = saved_errno;
  if (depth < 3) return;
  const std::uintptr_t live_from = stack_pointers[depth - 2];
  const auto thread_pointer = reinterpret_cast<std::uintptr_t>(pthread_self());
  if (live_from >= thread_pointer) return;
  const std::size_t slot = (thread_pointer >> 12) % kMaxEndedStacks;
  while (g_writing.exchange(true, std::memory_order_acquire)) __builtin_ia32_pause();
  g_ended[slot] = {thread_pointer, live_from};
  g_writing.store(false, std::memory_order_release);
}

int ended_stacks(EndedStack* out) {
  if (g_writing.exchange(true, std::memory_order_acquire)) return 0;
  int count = 0;
  for (const EndedStack& e : g_ended) {
    if (e.thread_pointer != 0) out[count++] = e;
  }
  g_writing.store(false, std::memory_order_release);
  return count;
}

}  // namespace tleak::agent
