// A test-and-test-and-set lock for critical sections of a few dozen instructions (the pool's
// free lists, the tracker's tables), where a futex-based mutex costs more than the work it guards.
#pragma once

#include <atomic>
#include <thread>

namespace tleak::detail {

class SpinLock {
 public:
  void lock() noexcept {
    for (int spins = 0;; ++spins) {
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
      while (locked_.load(std::memory_order_relaxed)) {
        // Under contention (or Valgrind, which runs one thread at a time) give the holder the core.
        if (++spins > 64) std::this_thread::yield();
      }
    }
  }
  bool try_lock() noexcept {
    return !locked_.load(std::memory_order_relaxed) &&
           !locked_.exchange(true, std::memory_order_acquire);
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

}  // namespace tleak::detail
