// Time as the runtime counts it: one tick per op, and the iteration the workload is in.
// Allocations, uses and frees are stamped with both, which is what drag and growth are measured in.
#pragma once

#include <atomic>
#include <cstdint>

namespace tleak {

class LogicalClock {
 public:
  // Called by the runtime once per op, before the op touches its buffers.
  std::uint64_t tick() { return now_.fetch_add(1, std::memory_order_relaxed) + 1; }
  std::uint64_t now() const { return now_.load(std::memory_order_relaxed); }

  std::uint64_t iteration() const { return iteration_.load(std::memory_order_relaxed); }
  // Called when one iteration of the workload's loop ends; returns the new iteration.
  std::uint64_t advance_iteration() {
    return iteration_.fetch_add(1, std::memory_order_relaxed) + 1;
  }

 private:
  std::atomic<std::uint64_t> now_{0};
  std::atomic<std::uint64_t> iteration_{0};
};

}  // namespace tleak
