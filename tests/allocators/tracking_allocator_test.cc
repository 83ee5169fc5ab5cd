#include "tleak/tracking_allocator.h"

#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "tleak/allocator_error.h"
#include "tleak/pool_allocator.h"
#include "tleak/symbolizer.h"
#include "tleak/system_allocator.h"
#include "../support/new_counter.h"

namespace tleak {
namespace {

[[gnu::noinline]] void* allocate_at_site_a(Allocator& a) {
  void* p = a.allocate(64, 64, {"site-a"});
  asm volatile("" ::: "memory");  // keeps this a real call frame, not a tail call
  return p;
}
[[gnu::noinline]] void* allocate_at_site_b(Allocator& a) {
  void* p = a.allocate(64, 64, {"site-b"});
  asm volatile("" ::: "memory");
  return p;
}

class RecordingSink : public EventSink {
 public:
  void on_allocate(const BlockInfo& block) override { allocations.push_back(block); }
  void on_free(const FreeEvent& event) override { frees.push_back(event); }
  std::vector<BlockInfo> allocations;
  std::vector<FreeEvent> frees;
};

TEST(TrackingAllocator, CountsAllocationsFreesAndUses) {
  PoolAllocator pool;
  TrackingContext context;
  TrackingAllocator tracker(pool, context);
  void* a = tracker.allocate(100);
  void* b = tracker.allocate(300);
  int foreign = 0;
  EXPECT_TRUE(tracker.use(a));
  EXPECT_TRUE(tracker.use(a));
  EXPECT_FALSE(tracker.use(&foreign));
  tracker.deallocate(a);
  const TrackerCounts counts = tracker.counts();
  EXPECT_EQ(counts.allocations, 2u);
  EXPECT_EQ(counts.frees, 1u);
  EXPECT_EQ(counts.uses, 2u);
  EXPECT_EQ(counts.untracked_uses, 1u);
  EXPECT_EQ(counts.live_blocks, 1u);
  EXPECT_EQ(counts.live_bytes, 300u);
  EXPECT_EQ(counts.peak_live_bytes, 400u);
  EXPECT_EQ(tracker.stats().bytes_in_use.current, 320);  // the pool's rounded figure
  tracker.deallocate(b);
}

TEST(TrackingAllocator, StampsAllocationLastUseAndFreeWithTheClock) {
  PoolAllocator pool;
  TrackingContext context;
  RecordingSink sink;
  context.set_sink(&sink);
  TrackingAllocator tracker(pool, context);
  LogicalClock& clock = context.clock();

  clock.tick();
  void* p = tracker.allocate(64, 64, {"tensor"});
  clock.tick();
  clock.tick();
  tracker.use(p);
  clock.advance_iteration();
  clock.tick();
  tracker.deallocate(p);

  ASSERT_EQ(sink.allocations.size(), 1u);
  ASSERT_EQ(sink.frees.size(), 1u);
  const FreeEvent& e = sink.frees[0];
  EXPECT_EQ(e.block.block, sink.allocations[0].block);
  EXPECT_STREQ(e.block.tag.name, "tensor");
  EXPECT_EQ(e.block.allocated.clock, 1u);
  EXPECT_EQ(e.block.allocated.iteration, 0u);
  EXPECT_EQ(e.block.last_use.clock, 3u);
  EXPECT_EQ(e.freed.clock, 4u);
  EXPECT_EQ(e.freed.iteration, 1u);
  EXPECT_EQ(e.block.allocator, tracker.id());
  EXPECT_EQ(e.block.size, 64u);
  // The event order counts each op begun and each event: op 1, allocate | op 2, op 3, use | op 4, free.
  EXPECT_EQ(e.block.allocated.event, 2u);
  EXPECT_EQ(e.block.last_use.event, 5u);
  EXPECT_EQ(e.freed.event, 7u);
  EXPECT_EQ(context.now().event, 8u);
}

TEST(TrackingAllocator, EventsInsideOneOpAreOrdered) {
  PoolAllocator pool;
  TrackingContext context;
  RecordingSink sink;
  context.set_sink(&sink);
  TrackingAllocator tracker(pool, context);
  context.clock().tick();
  void* a = tracker.allocate(64, 64, {"a"});
  void* b = tracker.allocate(64, 64, {"b"});
  tracker.deallocate(a);
  tracker.deallocate(b);
  ASSERT_EQ(sink.frees.size(), 2u);
  EXPECT_EQ(sink.allocations[0].allocated.clock, sink.allocations[1].allocated.clock);
  EXPECT_LT(sink.allocations[0].allocated.event, sink.allocations[1].allocated.event);
  EXPECT_LT(sink.allocations[1].allocated.event, sink.frees[0].freed.event);
  EXPECT_LT(sink.frees[0].freed.event, sink.frees[1].freed.event);
}

TEST(TrackingAllocator, SameCallSiteSameIdDifferentSiteDifferentId) {
  PoolAllocator pool;
  TrackingContext context;
  TrackingAllocator tracker(pool, context);
  std::vector<void*> blocks;
  // One call site in this function, called three times: a bound the compiler cannot see keeps
  // the loop from being unrolled into three sites (clang does at -O3).
  volatile int times = 3;
  for (int i = 0; i < times; ++i) blocks.push_back(allocate_at_site_a(tracker));
  blocks.push_back(allocate_at_site_b(tracker));
  const auto live = tracker.live_blocks();
  ASSERT_EQ(live.size(), 4u);
  EXPECT_EQ(live[0].site, live[1].site);
  EXPECT_EQ(live[1].site, live[2].site);
  EXPECT_NE(live[2].site, live[3].site);
  EXPECT_EQ(context.site_count(), 2u);
  for (void* p : blocks) tracker.deallocate(p);
  EXPECT_TRUE(tracker.live_blocks().empty());
}

TEST(TrackingAllocator, TopFrameOfASiteIsTheFunctionThatAllocated) {
  SystemAllocator heap;
  TrackingContext context;
  TrackingAllocator tracker(heap, context);
  void* p = allocate_at_site_a(tracker);
  const auto live = tracker.live_blocks();
  ASSERT_EQ(live.size(), 1u);
  Symbolizer symbolizer;
  const auto frames = symbolizer.symbolize(context.stack(live[0].site));
  ASSERT_GE(frames.size(), 2u);
  EXPECT_EQ(frames[0].function, "tleak::(anonymous namespace)::allocate_at_site_a(tleak::Allocator&)");
  EXPECT_NE(frames[1].function.find("TopFrameOfASiteIsTheFunctionThatAllocated"), std::string::npos)
      << frames[1].function;
  EXPECT_EQ(frames[0].module, "allocator_tests");
  EXPECT_TRUE(frames[0].file.ends_with("tracking_allocator_test.cc")) << frames[0].file;
  EXPECT_GT(frames[0].line, 0);
  tracker.deallocate(p);
}

TEST(TrackingAllocator, ZeroDepthPutsEveryBlockOnOneSite) {
  PoolAllocator pool;
  TrackingContext context({.stack_depth = 0});
  TrackingAllocator tracker(pool, context);
  void* a = allocate_at_site_a(tracker);
  void* b = allocate_at_site_b(tracker);
  EXPECT_EQ(context.site_count(), 1u);
  EXPECT_TRUE(context.stack(SiteId(0)).empty());
  tracker.deallocate(a);
  tracker.deallocate(b);
}

TEST(TrackingAllocator, DepthLimitsTheFramesKept) {
  PoolAllocator pool;
  TrackingContext context({.stack_depth = 1});
  TrackingAllocator tracker(pool, context);
  void* a = allocate_at_site_a(tracker);
  EXPECT_EQ(context.stack(SiteId(0)).size(), 1u);
  tracker.deallocate(a);
  EXPECT_THROW(TrackingContext({.stack_depth = 65}), std::invalid_argument);
}

TEST(TrackingAllocator, BadCallsReachTheCallerAsTheInnerAllocatorsErrors) {
  PoolAllocator pool;
  TrackingContext context;
  TrackingAllocator tracker(pool, context);
  void* a = tracker.allocate(64);
  tracker.deallocate(a);
  try {
    tracker.deallocate(a);
    FAIL();
  } catch (const AllocatorError& e) {
    EXPECT_EQ(e.kind(), AllocatorErrorKind::kDoubleFree);
  }
  EXPECT_THROW(tracker.allocate(0), AllocatorError);
  EXPECT_THROW(tracker.allocate(64, 5), AllocatorError);
  EXPECT_EQ(tracker.counts().allocations, 1u);
  EXPECT_EQ(tracker.counts().frees, 1u);
}

TEST(TrackingAllocator, SteadyStateAllocateFreeDoesNotCallOperatorNew) {
  PoolAllocator pool;
  TrackingContext context;
  TrackingAllocator tracker(pool, context);
  for (int i = 0; i < 100; ++i) tracker.deallocate(allocate_at_site_a(tracker));  // warm up
  const std::uint64_t before = testing::operator_new_calls();
  for (int i = 0; i < 1000; ++i) tracker.deallocate(allocate_at_site_a(tracker));
  EXPECT_EQ(testing::operator_new_calls() - before, 0u);
}

TEST(StackTable, InternHitDoesNotAllocate) {
  StackTable table;
  const std::uintptr_t stack[] = {0x1000, 0x2000, 0x3000};
  const SiteId first = table.intern(stack);
  const std::uint64_t before = testing::operator_new_calls();
  for (int i = 0; i < 100; ++i) EXPECT_EQ(table.intern(stack), first);
  EXPECT_EQ(testing::operator_new_calls() - before, 0u);
}

TEST(StackTable, KeepsEveryStackDistinctAcrossGrowth) {
  StackTable table;
  std::vector<std::uintptr_t> stack(4);
  for (std::uintptr_t i = 0; i < 5000; ++i) {
    stack = {i, i * 3, 0x400000 + i, 7};
    EXPECT_EQ(table.intern(stack), SiteId(static_cast<std::uint32_t>(i)));
  }
  EXPECT_EQ(table.size(), 5000u);
  stack = {1234, 1234 * 3, 0x400000 + 1234, 7};
  EXPECT_EQ(table.intern(stack), SiteId(1234));
  EXPECT_EQ(table.frames(SiteId(1234))[2], 0x400000u + 1234);
}

TEST(TrackingAllocator, EightThreadsTotalsAddUp) {
  PoolAllocator pool;
  TrackingContext context;
  TrackingAllocator tracker(pool, context);
  constexpr int kThreads = 8;
  constexpr int kPerThread = 2000;
  std::atomic<std::uint64_t> expected_live_bytes{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::uniform_int_distribution<std::size_t> size(1, 8192);
      std::vector<std::pair<void*, std::size_t>> mine;
      for (int i = 0; i < kPerThread; ++i) {
        const std::size_t n = size(rng);
        void* p = (i % 2 == 0) ? allocate_at_site_a(tracker) : tracker.allocate(n);
        tracker.use(p);
        mine.emplace_back(p, i % 2 == 0 ? 64 : n);
        if (i % 4 == 3) {  // free the one before: half the blocks stay live
          tracker.deallocate(mine[mine.size() - 2].first);
          mine.erase(mine.end() - 2);
        }
      }
      std::uint64_t live = 0;
      for (const auto& [p, n] : mine) live += n;
      expected_live_bytes += live;
    });
  }
  for (auto& thread : threads) thread.join();
  const TrackerCounts counts = tracker.counts();
  EXPECT_EQ(counts.allocations, std::uint64_t{kThreads} * kPerThread);
  EXPECT_EQ(counts.frees, std::uint64_t{kThreads} * kPerThread / 4);
  EXPECT_EQ(counts.uses, std::uint64_t{kThreads} * kPerThread);
  EXPECT_EQ(counts.live_blocks, counts.allocations - counts.frees);
  EXPECT_EQ(counts.live_bytes, expected_live_bytes.load());
  EXPECT_EQ(static_cast<std::uint64_t>(pool.stats().blocks_in_use.current), counts.live_blocks);
  const auto live = tracker.live_blocks();
  EXPECT_EQ(live.size(), counts.live_blocks);
  std::uint64_t sum = 0;
  for (const BlockInfo& block : live) sum += block.size;
  EXPECT_EQ(sum, counts.live_bytes);
  for (const BlockInfo& block : live) tracker.deallocate(const_cast<void*>(block.address));
  EXPECT_EQ(pool.stats().bytes_in_use.current, 0);
}

}  // namespace
}  // namespace tleak
