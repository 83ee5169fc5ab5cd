// The runtime's speed: 8-op elementwise chains on 4M floats, eager against JIT-fused (time and
// peak bytes beyond the inputs): memory-bound arithmetic (fused into generated code, and the same
// kernel interpreted), written with one rebound variable and with one local per step, and a
// compute-bound chain with tanh and exp (fused, interpreted); and a 1024x1024 matmul against Eigen
// called directly. The chains are in tests/support/elementwise_chains.h.
// Run: build/release/bench/runtime_benchmark
#include <benchmark/benchmark.h>

#include <Eigen/Core>

#include "tleak/device_allocator.h"
#include "tleak/pool_allocator.h"
#include "elementwise_chains.h"
#include "tleak/runtime/runtime_all.h"

namespace {

using namespace tleak::runtime;
using namespace tleak::runtime::chains;

constexpr std::int64_t kChain = 4 << 20;

void run_chain(benchmark::State& state, Function::Body body, Mode mode, JitOptions jit = {}) {
  tleak::PoolAllocator pool;
  tleak::DeviceAllocator device({.name = "device", .capacity = 1 << 20});
  Runtime rt(pool, device);
  const Tensor x = stateless_random_uniform(rt, {kChain}, 1), y = stateless_random_uniform(rt, {kChain}, 2);
  Function f(rt, "chain", std::move(body), mode, jit);
  f({x, y});  // trace and compile outside the timing
  const std::int64_t inputs = pool.stats().bytes_in_use.current;
  std::int64_t peak = 0;
  for (auto _ : state) {
    // Peak beyond the inputs (and the executable's arena, empty for a fully fused chain).
    benchmark::DoNotOptimize(f({x, y}));
    peak = std::max(peak, pool.stats().bytes_in_use.peak - inputs);
  }
  state.counters["peak_MiB"] = static_cast<double>(peak) / (1 << 20);
  state.SetBytesProcessed(state.iterations() * kChain * 4 * 3);
}

void BM_Arithmetic8Eager(benchmark::State& state) { run_chain(state, arithmetic8, Mode::kEager); }
void BM_Arithmetic8JitFused(benchmark::State& state) { run_chain(state, arithmetic8, Mode::kJit); }
// The fused kernel run by the tile interpreter instead of generated code.
void BM_Arithmetic8JitInterpreted(benchmark::State& state) {
  run_chain(state, arithmetic8, Mode::kJit, {.generate_code = false});
}
void BM_Arithmetic8LocalsEager(benchmark::State& state) { run_chain(state, arithmetic8_locals, Mode::kEager); }
void BM_Arithmetic8LocalsJitFused(benchmark::State& state) { run_chain(state, arithmetic8_locals, Mode::kJit); }
void BM_Transcendental8Eager(benchmark::State& state) { run_chain(state, transcendental8, Mode::kEager); }
void BM_Transcendental8JitFused(benchmark::State& state) { run_chain(state, transcendental8, Mode::kJit); }
BENCHMARK(BM_Arithmetic8Eager)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Arithmetic8JitFused)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Arithmetic8JitInterpreted)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Arithmetic8LocalsEager)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Arithmetic8LocalsJitFused)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Transcendental8Eager)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Transcendental8JitFused)->Unit(benchmark::kMillisecond);

constexpr std::int64_t kMatmul = 1024;

void set_gflops(benchmark::State& state) {
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * kMatmul * kMatmul * kMatmul * static_cast<double>(state.iterations()),
                                                  benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

void BM_MatmulRuntime(benchmark::State& state) {
  tleak::PoolAllocator pool;
  tleak::DeviceAllocator device({.name = "device", .capacity = 1 << 20});
  Runtime rt(pool, device);
  const Tensor a = stateless_random_uniform(rt, {kMatmul, kMatmul}, 1), b = stateless_random_uniform(rt, {kMatmul, kMatmul}, 2);
  for (auto _ : state) benchmark::DoNotOptimize(matmul(a, b));
  set_gflops(state);
}
BENCHMARK(BM_MatmulRuntime)->Unit(benchmark::kMillisecond);

void BM_MatmulEigenDirect(benchmark::State& state) {
  using M = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const M a = M::Random(kMatmul, kMatmul), b = M::Random(kMatmul, kMatmul);
  M c(kMatmul, kMatmul);
  for (auto _ : state) {
    c.noalias() = a * b;
    benchmark::DoNotOptimize(c.data());
  }
  set_gflops(state);
}
BENCHMARK(BM_MatmulEigenDirect)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
