// Memory behaviour of each mode, read from the allocators' own statistics.
#include "elementwise_chains.h"
#include "runtime_fixture.h"

namespace tleak::runtime {
namespace {

using testing::RuntimeTest;
using chains::arithmetic8_locals;
using chains::transcendental8;

class MemoryTest : public RuntimeTest {};

constexpr std::int64_t kN = 1 << 16;  // 256 KiB of floats
constexpr std::int64_t kBytes = kN * 4;

TEST_F(MemoryTest, EagerLoopThatRebindsHoldsAtMostTwoResults) {
  const auto base = pool_.stats().bytes_in_use.current;
  Tensor x;
  for (int i = 0; i < 20; ++i) x = random_normal(rt_, {kN});  // the old value goes as the new arrives
  const auto peak = pool_.stats().bytes_in_use.peak - base;
  EXPECT_LE(peak, 2 * kBytes + 64);  // plus the generator's state
  EXPECT_GE(peak, 2 * kBytes);
}

TEST_F(MemoryTest, TracedExecutorPeakIsBelowTheEagerSumOfTheChain) {
  const Tensor x = random_tensor({kN}), y = random_tensor({kN});
  Function graph(rt_, "chain", transcendental8, Mode::kGraph);
  graph({x, y});  // trace, and run once
  const std::int64_t held = pool_.stats().bytes_in_use.current;  // inputs and the trace's graph
  const Tensor out = graph({x, y})[0];
  const std::int64_t executor_peak = pool_.stats().bytes_in_use.peak - held;
  const std::int64_t eager_sum = 8 * kBytes;  // every intermediate of the chain, had each been kept
  EXPECT_LT(executor_peak, eager_sum);
  EXPECT_EQ(executor_peak, 2 * kBytes);  // an op's input and its output, never more
}

TEST_F(MemoryTest, JitAssignsTempBuffersByLiveness) {
  // A chain of matmuls: nothing fuses, every intermediate is a temp.
  const auto body = [](const std::vector<Tensor>& a, const std::vector<std::int64_t>&) {
    Tensor t = a[0];
    for (int i = 0; i < 6; ++i) t = matmul(t, a[1]);
    return std::vector<Tensor>{reduce_sum(t)};
  };
  const Tensor x = random_tensor({64, 64}), w = random_tensor({64, 64}, -0.1f, 0.1f);
  Function jit(rt_, "mm", body, Mode::kJit);
  Function eager(rt_, "mm", body, Mode::kEager);
  EXPECT_NEAR(jit({x, w})[0].item(), eager({x, w})[0].item(), 1e-3);
  const std::size_t one = 64 * 64 * 4;
  // Six temps, never more than two alive at once (a matmul's input and output).
  EXPECT_EQ(jit.last_executable()->temp_count(), 6u);
  EXPECT_EQ(jit.last_executable()->arena_bytes(Placement::kHost), 2 * one);
}

TEST_F(MemoryTest, FusedChainOfEightOpsAllocatesOneOutputAndNoIntermediates) {
  const Tensor x = random_tensor({kN}), y = random_tensor({kN});
  Function jit(rt_, "chain", transcendental8, Mode::kJit);
  jit({x, y});  // compile
  EXPECT_EQ(jit.last_executable()->fused_kernel_count(), 1u);
  EXPECT_EQ(jit.last_executable()->fused_op_count(), 8u);
  EXPECT_EQ(jit.last_executable()->arena_bytes(Placement::kHost), 0u);
  const auto calls = pool_.stats().allocate_calls;
  const Tensor out = jit({x, y})[0];
  EXPECT_EQ(pool_.stats().allocate_calls - calls, 1u);
  EXPECT_EQ(out.size(), kN);
}

// The most bytes allocated beyond the inputs over two calls (the first traces and compiles), on a
// pool of its own so no earlier test's peak hides it.
std::int64_t peak_beyond_inputs(const Function::Body& body, Mode mode) {
  PoolAllocator pool;
  DeviceAllocator device({.name = "device", .capacity = 1 << 20});
  Runtime rt(pool, device);
  const Tensor x = fill(rt, {kN}, 0.5f), y = fill(rt, {kN}, 0.25f);
  const std::int64_t inputs = pool.stats().bytes_in_use.current;
  Function f(rt, "chain", body, mode);
  f({x, y});
  f({x, y});
  return pool.stats().bytes_in_use.peak - inputs;
}

TEST(MemoryPeak, FusedChainHoldsOnlyItsOutputWhereEagerHoldsTwoOrEight) {
  EXPECT_EQ(peak_beyond_inputs(transcendental8, Mode::kEager), 2 * kBytes);    // an op's input and output
  EXPECT_EQ(peak_beyond_inputs(arithmetic8_locals, Mode::kEager), 8 * kBytes);  // all eight results
  EXPECT_EQ(peak_beyond_inputs(transcendental8, Mode::kJit), kBytes);           // the output alone
  EXPECT_EQ(peak_beyond_inputs(arithmetic8_locals, Mode::kJit), kBytes);        // traced, locals make no buffers
}

TEST_F(MemoryTest, DefaultGraphGrowsByTheBytesOfItsConstants) {
  Graph graph(rt_);
  GraphScope scope(graph);
  const auto before = pool_.stats().bytes_in_use.current;
  for (int i = 0; i < 10; ++i) square(constant(rt_, std::vector<float>(10000, 1.0f), {10000}));
  EXPECT_EQ(graph.constant_bytes(), 10u * 40000);
  EXPECT_EQ(pool_.stats().bytes_in_use.current - before, 10 * 40000);  // 40000 is a multiple of 64
  EXPECT_EQ(graph.node_count(), 20u);
}

TEST_F(MemoryTest, ASecondShapeAddsACacheEntryARepeatedOneDoesNot) {
  Function jit(rt_, "chain", transcendental8, Mode::kJit);
  jit({random_tensor({100}), random_tensor({100})});
  const auto blocks = pool_.stats().blocks_in_use.current;
  jit({random_tensor({100}), random_tensor({100})});
  EXPECT_EQ(jit.cache_size(), 1u);
  jit({random_tensor({200}), random_tensor({200})});
  EXPECT_EQ(jit.cache_size(), 2u);
  EXPECT_GE(pool_.stats().blocks_in_use.current, blocks);
  jit.clear_cache();
  EXPECT_EQ(jit.cache_size(), 0u);
}

TEST_F(MemoryTest, JitTempsLiveForOneExecutionNotWithTheCachedExecutable) {
  const auto body = [](const std::vector<Tensor>& a, const std::vector<std::int64_t>&) {
    return std::vector<Tensor>{reduce_sum(matmul(a[0], a[0]))};
  };
  Function jit(rt_, "mm", body, Mode::kJit);
  const Tensor x = random_tensor({128, 128});
  jit({x});  // trace and compile
  const auto before = pool_.stats().bytes_in_use.current;
  const auto calls = pool_.stats().allocate_calls;
  jit({x});
  const std::int64_t arena = 128 * 128 * 4;
  EXPECT_EQ(jit.last_executable()->arena_bytes(Placement::kHost), static_cast<std::size_t>(arena));
  // The matmul's temp existed during the run, and went when the computation completed; the cached
  // executable holds none of it.
  EXPECT_EQ(pool_.stats().allocate_calls - calls, 2u);  // the temp arena and the output
  EXPECT_EQ(pool_.stats().bytes_in_use.current, before);
  EXPECT_EQ(jit.cache_size(), 1u);
}

TEST_F(MemoryTest, DeviceArenaHoldsTheLargeIntermediateOfACompiledFunction) {
  const auto body = [](const std::vector<Tensor>& a, const std::vector<std::int64_t>&) {
    const Tensor big = matmul(a[0], a[0]);
    return std::vector<Tensor>{reduce_sum(reduce_mean(big, 0))};
  };
  const Tensor x = to_device(random_tensor({256, 256}));
  Function jit(rt_, "big", body, Mode::kJit);
  jit({x});
  EXPECT_EQ(jit.last_executable()->arena_bytes(Placement::kDevice), 256u * 256 * 4 + 256 * 4);
  EXPECT_EQ(jit.last_executable()->arena_bytes(Placement::kHost), 0u);
}

}  // namespace
}  // namespace tleak::runtime
