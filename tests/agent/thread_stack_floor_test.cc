#include "thread_stack_floor.h"

#include <gtest/gtest.h>

namespace {

using tleak::agent::ended_thread_stack_floor;
using tleak::agent::EndedStack;
using tleak::agent::other_thread_stack_floor;
using tleak::agent::ThreadStack;

constexpr std::uintptr_t kStart = 0x7f0000000000, kEnd = kStart + (8 << 20);
// A thread whose stack the C library made: its descriptor at the top of the mapping.
constexpr ThreadStack kWorker{kStart + 0x7ff000, kEnd - 0x940};

TEST(ThreadStackFloor, AThreadsOwnStackIsReadFromItsStackPointerLessTheRedZone) {
  EXPECT_EQ(other_thread_stack_floor(&kWorker, 1, 0, kStart, kEnd, false), kWorker.stack_pointer - 128);
  // The main thread's stack: its descriptor lies elsewhere.
  const ThreadStack main_thread{kStart + 0x1000, 0x5555000};
  EXPECT_EQ(other_thread_stack_floor(&main_thread, 1, 0, kStart, kEnd, true), main_thread.stack_pointer - 128);
  // Within the red zone of the mapping's start: all of it.
  const ThreadStack at_bottom{kStart + 64, kEnd - 0x940};
  EXPECT_EQ(other_thread_stack_floor(&at_bottom, 1, 0, kStart, kEnd, false), kStart);
}

TEST(ThreadStackFloor, AnyOtherMappingIsReadWhole) {
  // No read thread's stack pointer in it.
  EXPECT_EQ(other_thread_stack_floor(&kWorker, 1, 0, kEnd, kEnd + 4096, false), kEnd);
  EXPECT_EQ(other_thread_stack_floor(nullptr, 0, 0, kStart, kEnd, false), kStart);
  // A stack the program made (a coroutine's, a pool's): the thread's descriptor is not in it.
  const ThreadStack on_coroutine{kStart + 0x4000, 0x7e0000001000};
  EXPECT_EQ(other_thread_stack_floor(&on_coroutine, 1, 0, kStart, kEnd, false), kStart);
  // Two threads' stack pointers in one mapping: where one's frames end the other's may lie.
  const ThreadStack two[] = {kWorker, {kStart + 0x3000, kEnd - 0x940}};
  EXPECT_EQ(other_thread_stack_floor(two, 2, 0, kStart, kEnd, false), kStart);
  // The scanning thread's own stack: read from its own point, by the caller.
  EXPECT_EQ(other_thread_stack_floor(&kWorker, 1, kStart + 0x2000, kStart, kEnd, false), kStart);
}

// A thread that ended left its stack to the C library: read from where the thread left off when
// its descriptor lies at the top of the mapping and no living thread stands in it.
TEST(EndedThreadStackFloor, AnEndedThreadsStackIsReadFromWhereItLeftOff) {
  const EndedStack ended{kEnd - 0x940, kEnd - 0x1800};
  EXPECT_EQ(ended_thread_stack_floor(&ended, 1, nullptr, 0, 0, kStart, kEnd), ended.live_from);
  // Another mapping, or none noted: all of it.
  EXPECT_EQ(ended_thread_stack_floor(&ended, 1, nullptr, 0, 0, kEnd, kEnd + (8 << 20)), kEnd);
  EXPECT_EQ(ended_thread_stack_floor(nullptr, 0, nullptr, 0, 0, kStart, kEnd), kStart);
}

TEST(EndedThreadStackFloor, ALivingThreadOrAnyDoubtReadsTheMappingWhole) {
  const EndedStack ended{kEnd - 0x940, kEnd - 0x1800};
  // A thread the library started on that stack since: its own stack pointer decides (the caller).
  EXPECT_EQ(ended_thread_stack_floor(&ended, 1, &kWorker, 1, 0, kStart, kEnd), kStart);
  // The scanning thread's own stack.
  EXPECT_EQ(ended_thread_stack_floor(&ended, 1, nullptr, 0, kEnd - 0x3000, kStart, kEnd), kStart);
  // Two ended threads' descriptors in one mapping (a pool of stacks the program made).
  const EndedStack two[] = {ended, {kStart + 0x10000, kStart + 0x8000}};
  EXPECT_EQ(ended_thread_stack_floor(two, 2, nullptr, 0, 0, kStart, kEnd), kStart);
  // A descriptor far below the mapping's top: not a stack the library made (or since unmapped and
  // the place taken by other memory).
  const EndedStack low{kStart + 0x100000, kStart + 0x80000};
  EXPECT_EQ(ended_thread_stack_floor(&low, 1, nullptr, 0, 0, kStart, kEnd), kStart);
  // Where the thread left off is below the mapping: all of it.
  const EndedStack below{kEnd - 0x940, kStart - 0x1000};
  EXPECT_EQ(ended_thread_stack_floor(&below, 1, nullptr, 0, 0, kStart, kEnd), kStart);
}

}  // namespace
