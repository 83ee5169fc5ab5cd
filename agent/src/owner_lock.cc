#include "owner_lock.h"

#include <linux/membarrier.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace tleak::agent {
namespace {

void pause_or_yield(int* spins) {
  if (++*spins > 64) {
    sched_yield();
    return;
  }
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

namespace owner_locks {

bool g_asymmetric = false;
std::atomic<bool> g_claimed{false};

namespace {

long membarrier(int command) { return syscall(__NR_membarrier, command, 0, 0); }

}  // namespace

bool init() {
  const long commands = membarrier(MEMBARRIER_CMD_QUERY);
  g_asymmetric = commands > 0 && (commands & MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0 &&
                 membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
  return g_asymmetric;
}

void claim_all() {
  if (!g_asymmetric) return;
  g_claimed.store(true, std::memory_order_relaxed);
  // Every thread of the process that runs now passes a full barrier (one that does not run passed
  // one when it stopped): an owner that took its lock before this either shows it busy below, or
  // its load of g_claimed comes after the store above and it waits.
  // Once registered (init), the kernel has no error to give for this command.
  membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
}

void release_all() {
  if (g_asymmetric) g_claimed.store(false, std::memory_order_release);
}

void forget() { g_claimed.store(false, std::memory_order_relaxed); }

}  // namespace owner_locks

void OwnerLock::lock_as_other() noexcept {
  if (!owner_locks::g_asymmetric) {
    lock_.lock();
    return;
  }
  // The owner leaves within a few dozen instructions, or after its send if the socket is full.
  for (int spins = 0; busy_.load(std::memory_order_acquire) != 0;) pause_or_yield(&spins);
}

void OwnerLock::unlock_as_other() noexcept {
  if (!owner_locks::g_asymmetric) lock_.unlock();
}

void OwnerLock::wait_for_release() noexcept {
  // A claimer holds the buffer, or is about to look at it: step out of its way and come back.
  for (;;) {
    busy_.store(0, std::memory_order_release);
    for (int spins = 0; owner_locks::g_claimed.load(std::memory_order_acquire);) pause_or_yield(&spins);
    busy_.store(1, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (!owner_locks::g_claimed.load(std::memory_order_acquire)) return;
  }
}

}  // namespace tleak::agent
