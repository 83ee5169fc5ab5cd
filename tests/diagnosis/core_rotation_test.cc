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

// A reader that had to wait for its core (a busy thread beside it) is moved off that core, and
// afterwards is free to run on every core it was allowed, as before.
TEST(CoreRotation, AReaderThatWaitedForItsCoreMovesAndStaysFree) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  if (CPU_COUNT(&allowed) < 2) GTEST_SKIP() << "one core allowed: nothing to move to";
  int first = 0;
  while (!CPU_ISSET(first, &allowed)) ++first;

  CoreRotation rotation;
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    const cpu_set_t core = only(first);
    pthread_setaffinity_np(pthread_self(), sizeof core, &core);
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  const cpu_set_t core = only(first);
  ASSERT_EQ(sched_setaffinity(0, sizeof core, &core), 0);
  spin_for(50);  // sharing the core with `busy`: preempted meanwhile
  ASSERT_EQ(sched_getcpu(), first);
  // Free again, as tleak's reader is, but still where it ran.
  ASSERT_EQ(sched_setaffinity(0, sizeof allowed, &allowed), 0);
  rotation.tick(now_ns() + CoreRotation::kPeriodNs);
  const int moved_to = sched_getcpu();
  cpu_set_t after;
  ASSERT_EQ(sched_getaffinity(0, sizeof after, &after), 0);
  stop = true;
  busy.join();
  EXPECT_NE(moved_to, first);
  EXPECT_TRUE(CPU_EQUAL(&after, &allowed));
}

// A reader that never waited is left where the scheduler put it.
TEST(CoreRotation, AReaderWithACoreOfItsOwnStays) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  if (CPU_COUNT(&allowed) < 2) GTEST_SKIP() << "one core allowed";
  CoreRotation rotation;
  rotation.tick(now_ns() + CoreRotation::kPeriodNs);  // takes the count so far
  rusage before{};
  getrusage(RUSAGE_THREAD, &before);
  const int here = sched_getcpu();
  rotation.tick(now_ns() + 2 * CoreRotation::kPeriodNs);
  rusage after_usage{};
  getrusage(RUSAGE_THREAD, &after_usage);
  if (after_usage.ru_nivcsw != before.ru_nivcsw)
    GTEST_SKIP() << "preempted meanwhile: the machine is busy";
  EXPECT_EQ(sched_getcpu(), here);
}

}  // namespace
