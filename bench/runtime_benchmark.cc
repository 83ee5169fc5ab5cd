// The runtime's speed: 8-op elementwise chains on 4M floats, eager against JIT-fused (time and
// peak bytes beyond the inputs): memory-bound arithmetic (fused into generated code), written with
// one rebound variable and with one local per step, and a compute-bound chain with tanh and exp
// (fused, interpreted); and a 1024x1024 matmul against Eigen called directly.
// Run: build/release/bench/runtime_benchmark
#include <benchmark/benchmark.h>

#include <Eigen/Core>

#include "tleak/device_allocator.h"
#include "tleak/pool_allocator.h"
#include "tleak/runtime/runtime_all.h"

namespace {

using namespace tleak::runtime;

constexpr std::int64_t kChain = 4 << 20;

// Memory-bound: eight cheap arithmetic ops, where fusion saves the passes over memory.
std::vector<Tensor> arithmetic8(const std::vector<Tensor>& a, const std::vector<std::int64_t>&) {
  Tensor t = a[0];
  t = add(t, a[1]);
  t = mul(t, a[1]);
  t = sub(t, a[1]);
  t = square(t);
  t = neg(t);
  t = relu(t);
  t = mul(t, a[1]);
  t = add(t, a[1]);
  return {t};
}

// The same chain written as function bodies usually are, one local per step: in eager mode every
// intermediate lives until the function returns; traced and fused, none is ever made.
std::vector<Tensor> arithmetic8_locals(const std::vector<Tensor>& a, const std::vector<std::int64_t>&) {
  const Tensor sum = add(a[0], a[1]);
  const Tensor scaled = mul(sum, a[1]);
  const Tensor shifted = sub(scaled, a[1]);
  const Tensor squared = square(shifted);
  const Tensor negated = neg(squared);
  const Tensor rectified = relu(negated);
  const Tensor rescaled = mul(rectified, a[1]);
  return {add(rescaled, a[1])};
}

// Compute-bound: tanh and exp dominate, so saved memory passes matter less.
std::vector<Tensor> transcendental8(const std::vector<Tensor>& a, const std::vector<std::int64_t>&) {
  Tensor t = a[0];
  t = add(t, a[1]);
  t = mul(t, a[1]);
  t = tanh(t);
  t = square(t);
  t = sub(t, a[1]);
  t = exp(t);
  t = neg(t);
  t = relu(t);
  return {t};
}

void run_chain(benchmark::State& state, Function::Body body, Mode mode) {
  tleak::PoolAllocator pool;
  tleak::DeviceAllocator device({.name = "device", .capacity = 1 << 20});
  Runtime rt(pool, device);
  const Tensor x = stateless_random_uniform(rt, {kChain}, 1), y = stateless_random_uniform(rt, {kChain}, 2);
  Function f(rt, "chain", std::move(body), mode);
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
void BM_Arithmetic8LocalsEager(benchmark::State& state) { run_chain(state, arithmetic8_locals, Mode::kEager); }
void BM_Arithmetic8LocalsJitFused(benchmark::State& state) { run_chain(state, arithmetic8_locals, Mode::kJit); }
void BM_Transcendental8Eager(benchmark::State& state) { run_chain(state, transcendental8, Mode::kEager); }
void BM_Transcendental8JitFused(benchmark::State& state) { run_chain(state, transcendental8, Mode::kJit); }
BENCHMARK(BM_Arithmetic8Eager)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Arithmetic8JitFused)->Unit(benchmark::kMillisecond);
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
