// A lock for data that one thread uses all the time and others seldom: a thread's record buffer,
// which its thread writes at every allocation and free, and which a fence (on another thread, ten
// times a second or when tleak asks for a flush) sends. The owner takes it with a plain store and
// a load, no atomic exchange: the exchange is a full barrier that waits for the thread's store
// buffer to drain, and it was a tenth of the agent's own cost per allocation (the PyTorch loop:
// 20 ms of 2.2 million allocations and frees). The other side pays instead: membarrier(2) makes
// every running thread of the process pass a full barrier, which turns the owner's compiler
// barrier between its store and its load into one (Dekker's exclusion, as userspace RCU and
// hazard pointers use it). Without that membarrier (an old kernel, a filter that refuses it) both
// sides take an ordinary spin lock.
#pragma once

#include <atomic>
#include <cstdint>

#include "tleak/detail/spin_lock.h"

namespace tleak::agent {

namespace owner_locks {
// Set once at start-up, before any lock is taken: the membarrier way works here.
extern bool g_asymmetric;
// Set while one other thread holds every owner lock (claim_all).
extern std::atomic<bool> g_claimed;

// Registers the process for membarrier's private expedited barrier; false (spin locks) if the
// kernel refuses. Once, at start-up, on the main thread.
bool init();
// The other side's first step: owners that come after wait. One claimer at a time (the caller
// serializes claims), never from inside an owner's own lock.
void claim_all();
// Lets the owners go on; after every OwnerLock::unlock_as_other of the claim.
void release_all();
// In a forked child, which has only the thread that forked: nothing is claimed.
void forget();
}  // namespace owner_locks

class OwnerLock {
 public:
  // Only by the thread that owns the data.
  void lock_as_owner() noexcept {
    if (__builtin_expect(owner_locks::g_asymmetric, 1)) {
      busy_.store(1, std::memory_order_relaxed);
      // A compiler barrier that a claimer's membarrier makes a full one: the store is visible
      // before the load is made.
      std::atomic_signal_fence(std::memory_order_seq_cst);
      if (__builtin_expect(owner_locks::g_claimed.load(std::memory_order_acquire), 0)) wait_for_release();
      return;
    }
    lock_.lock();
  }
  void unlock_as_owner() noexcept {
    if (__builtin_expect(owner_locks::g_asymmetric, 1)) {
      busy_.store(0, std::memory_order_release);
      return;
    }
    lock_.unlock();
  }
  // By the claimer, between owner_locks::claim_all and release_all.
  void lock_as_other() noexcept;
  void unlock_as_other() noexcept;

 private:
  [[gnu::noinline]] void wait_for_release() noexcept;

  std::atomic<std::uint32_t> busy_{0};
  detail::SpinLock lock_;
};

}  // namespace tleak::agent
