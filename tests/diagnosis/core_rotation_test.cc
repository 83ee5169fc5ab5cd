#include "core_rotation.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace {

using tleak::diagnosis::CoreRotation;

cpu_set_t only(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return set;
}

std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

// Busy on this thread's core for `ms`.
void spin_for(int ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < end) {
  }
}

// Preempted on `first` for 50 ms by a busy thread sharing it, as tleak's reader is, and still
// there at the tick; returns the core a tick with `allocating` threads leaves it on, and whether it
// is allowed every core afterwards (it is not unless the tick moved it: it was pinned for the
// test). Pinned through the tick: allowed every core before it, the scheduler once moved this
// thread to the idle core first, in a loaded run of the suite, and the tick then moved it back.
struct AfterTick {
  int core;
  bool allowed_everywhere;
};
AfterTick tick_after_waiting(int first, const cpu_set_t& allowed, int allocating) {
  CoreRotation rotation;
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    const cpu_set_t core = only(first);
    pthread_setaffinity_np(pthread_self(), sizeof core, &core);
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  const cpu_set_t core = only(first);
  sched_setaffinity(0, sizeof core, &core);
  spin_for(50);
  rotation.tick(now_ns() + CoreRotation::kPeriodNs, allocating);
  AfterTick after{sched_getcpu(), false};
  cpu_set_t now;
  sched_getaffinity(0, sizeof now, &now);
  after.allowed_everywhere = CPU_EQUAL(&now, &allowed);
  sched_setaffinity(0, sizeof allowed, &allowed);
  stop = true;
  busy.join();
  return after;
}

// The cores this test may use (it is skipped with fewer than two) and the first of them.
class CoreRotationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
    if (CPU_COUNT(&allowed) < 2) GTEST_SKIP() << "one core allowed: nothing to move to";
    while (!CPU_ISSET(first, &allowed)) ++first;
  }
  cpu_set_t allowed;
  int first = 0;
};

// A reader that had to wait for its core while the program had a thread allocating on every core
// is moved off that core, and afterwards is free to run on every core it was allowed, as before.
TEST_F(CoreRotationTest, AReaderThatWaitedBesideAllocatingThreadsMovesAndStaysFree) {
  const AfterTick after = tick_after_waiting(first, allowed, CPU_COUNT(&allowed));
  EXPECT_NE(after.core, first);
  EXPECT_TRUE(after.allowed_everywhere);
}

// Fewer allocating threads than cores: what the reader waited for was not the program's allocating
// threads (tleak's own, or a pool spinning), and moving would take it onto the allocating one's
// core.
TEST_F(CoreRotationTest, AReaderBesideFewerAllocatingThreadsThanCoresStays) {
  const AfterTick after = tick_after_waiting(first, allowed, CPU_COUNT(&allowed) - 1);
  EXPECT_EQ(after.core, first);
  EXPECT_FALSE(after.allowed_everywhere);  // its affinity left as it was
}

// A reader that never waited is left where the scheduler put it. Pinned there for the test (the
// rotation still knows every core as allowed): unpinned, the scheduler once moved this thread
// between the two reads of its core with no preemption counted, in a loaded run of the suite.
TEST_F(CoreRotationTest, AReaderWithACoreOfItsOwnStays) {
  CoreRotation rotation;
  rotation.tick(now_ns() + CoreRotation::kPeriodNs, CPU_COUNT(&allowed));  // takes the count so far
  // From here to the second tick: any preemption (the pinning's own migration too) skips the test.
  rusage before{};
  getrusage(RUSAGE_THREAD, &before);
  const int here = sched_getcpu();
  const cpu_set_t core = only(here);
  sched_setaffinity(0, sizeof core, &core);
  rotation.tick(now_ns() + 2 * CoreRotation::kPeriodNs, CPU_COUNT(&allowed));
  rusage after_usage{};
  getrusage(RUSAGE_THREAD, &after_usage);
  const int after = sched_getcpu();
  sched_setaffinity(0, sizeof allowed, &allowed);
  if (after_usage.ru_nivcsw != before.ru_nivcsw)
    GTEST_SKIP() << "preempted meanwhile: the machine is busy";
  EXPECT_EQ(after, here);
}

}  // namespace
