// ns per allocate+free pair for each allocator, and what tracking adds on top of the pool.
// Run: build/release/bench/allocators_benchmark
#include <benchmark/benchmark.h>

#include <array>
#include <cstdlib>
#include <functional>

#include "tleak/pool_allocator.h"
#include "tleak/system_allocator.h"
#include "tleak/tracking_allocator.h"

namespace {

// Mixed sizes, as a tensor runtime asks for them: scalars, small vectors, a few larger buffers.
constexpr std::array<std::size_t, 8> kSizes = {64, 256, 1000, 4096, 100, 16384, 48, 700};

// Runs `body` with `depth` extra frames on the stack, so stack capture has real frames to walk.
[[gnu::noinline]] void at_depth(int depth, const std::function<void()>& body) {
  if (depth <= 0) {
    body();
  } else {
    at_depth(depth - 1, body);
  }
  benchmark::ClobberMemory();  // keeps each level a real frame
}

void pairs(benchmark::State& state, tleak::Allocator& allocator) {
  std::size_t i = 0;
  for (auto _ : state) {
    void* p = allocator.allocate(kSizes[i++ % kSizes.size()]);
    benchmark::DoNotOptimize(p);
    allocator.deallocate(p);
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_GlibcMallocFree(benchmark::State& state) {
  std::size_t i = 0;
  for (auto _ : state) {
    void* p = std::malloc(kSizes[i++ % kSizes.size()]);
    benchmark::DoNotOptimize(p);
    std::free(p);
  }
}
BENCHMARK(BM_GlibcMallocFree);

void BM_SystemAllocator(benchmark::State& state) {
  tleak::SystemAllocator system;
  pairs(state, system);
}
BENCHMARK(BM_SystemAllocator);

void BM_PoolAllocator(benchmark::State& state) {
  tleak::PoolAllocator pool;
  pairs(state, pool);
}
BENCHMARK(BM_PoolAllocator);

// Pairs with 256 blocks live in a ring, so best-fit has holes to choose among and coalescing has
// neighbours to merge.
void BM_PoolAllocatorWithLiveSet(benchmark::State& state) {
  tleak::PoolAllocator pool;
  std::array<void*, 256> ring{};
  std::size_t i = 0;
  for (auto _ : state) {
    void*& slot = ring[i % ring.size()];
    pool.deallocate(slot);
    slot = pool.allocate(kSizes[(i * 7) % kSizes.size()]);
    ++i;
  }
  for (void* p : ring) pool.deallocate(p);
}
BENCHMARK(BM_PoolAllocatorWithLiveSet);

// Argument: frames captured per allocation (0: tracking without stacks). The loop runs under
// 40 extra frames so every depth is filled.
void BM_TrackedPool(benchmark::State& state) {
  tleak::PoolAllocator pool;
  tleak::TrackingContext context({.stack_depth = static_cast<int>(state.range(0))});
  tleak::TrackingAllocator tracker(pool, context);
  at_depth(40, [&] { pairs(state, tracker); });
}
BENCHMARK(BM_TrackedPool)->Arg(0)->Arg(12)->Arg(32);

}  // namespace

BENCHMARK_MAIN();
