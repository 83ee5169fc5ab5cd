// tleak's reader does not stay on one core while the program keeps every core busy. The scheduler
// balances the number of runnable threads per core, so with as many busy program threads as cores
// it leaves the reader beside one of them for good: that thread gets half a core and the others a
// whole one, and a program that joins its threads waits for the slowest (malloc-heavy with two
// threads on two cores ended its threads at 0.18 s and 0.26 s under tleak). So every few
// milliseconds, if the reader had to wait for its core meanwhile, it is moved off it (onto any
// other core tleak is allowed) and at once allowed every core again: its share is taken from each
// thread in turn. A reader that never waits (a core is idle) stays where the scheduler put it.
#pragma once

#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdint>

namespace tleak::diagnosis {

class CoreRotation {
 public:
  static constexpr std::uint64_t kPeriodNs = 4'000'000;

  CoreRotation() {
    CPU_ZERO(&allowed_);
    if (sched_getaffinity(0, sizeof allowed_, &allowed_) != 0) return;
    allowed_cores_ = CPU_COUNT(&allowed_);
    rotating_ = allowed_cores_ > 1;
  }
  CoreRotation(const CoreRotation&) = delete;
  CoreRotation& operator=(const CoreRotation&) = delete;

  // Called as the reader goes on (`now_ns` monotonic), with how many of the program's threads
  // allocated since the last call.
  void tick(std::uint64_t now_ns, int allocating_threads) {
    threads_ = std::max(threads_, allocating_threads);
    if (!rotating_ || now_ns - last_ns_ < kPeriodNs) return;
    last_ns_ = now_ns;
    const int busy = threads_;
    threads_ = 0;
    rusage usage{};
    if (getrusage(RUSAGE_THREAD, &usage) != 0) return;
    const long waited = usage.ru_nivcsw - preempted_;
    preempted_ = usage.ru_nivcsw;
    // Fewer allocating threads than cores: the core the reader waited for was taken by another of
    // tleak's threads, or a program thread that does not allocate (a worker pool spinning), and
    // moving would only take it onto the allocating thread's core.
    if (waited <= 0 || busy < allowed_cores_) return;
    // Off this core (onto any other allowed one), then free again: the scheduler may still place
    // it as it sees fit afterwards.
    const int here = sched_getcpu();
    if (here < 0 || here >= CPU_SETSIZE || !CPU_ISSET(here, &allowed_)) return;
    cpu_set_t others = allowed_;
    CPU_CLR(here, &others);
    if (sched_setaffinity(0, sizeof others, &others) != 0) {
      rotating_ = false;  // not ours to change (a container's policy): as the scheduler decides
      return;
    }
    sched_setaffinity(0, sizeof allowed_, &allowed_);
  }

 private:
  cpu_set_t allowed_;
  bool rotating_ = false;
  std::uint64_t last_ns_ = 0;
  long preempted_ = 0;
  int allowed_cores_ = 0;
  int threads_ = 0;  // the most allocating threads a call told of since the period began
};

}  // namespace tleak::diagnosis
