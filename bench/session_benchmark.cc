// What tracking costs a whole run: the clean-loop workload end to end (allocators, tracker,
// recorder, classification and symbolization), untracked against tracked at several stack depths;
// and symbolization alone, the fixed cost every report pays once to read this binary's DWARF.
// Run: build/release/bench/session_benchmark
#include <benchmark/benchmark.h>

#include "tleak/detail/stack_capture.h"
#include "tleak/diagnosis/session.h"
#include "tleak/symbolizer.h"
#include "tleak/scenarios/scenario.h"

namespace {

void run_clean_loop(benchmark::State& state, bool track, int depth) {
  const tleak::scenarios::Scenario* scenario = tleak::scenarios::find_scenario("clean-loop");
  tleak::diagnosis::SessionOptions options;
  options.scenario = scenario->id;
  options.params.iterations = 200;
  options.track = track;
  options.stack_depth = depth;
  for (auto _ : state) {
    benchmark::DoNotOptimize(tleak::diagnosis::run_workload(scenario->run, options));
  }
}

void BM_CleanLoopUntracked(benchmark::State& state) { run_clean_loop(state, false, 0); }
BENCHMARK(BM_CleanLoopUntracked)->Unit(benchmark::kMillisecond);

void BM_CleanLoopTracked(benchmark::State& state) {
  run_clean_loop(state, true, static_cast<int>(state.range(0)));
}
BENCHMARK(BM_CleanLoopTracked)->Arg(12)->Arg(32)->Unit(benchmark::kMillisecond);

// A fresh symbolizer per iteration, as each report has: opening the DWARF dominates.
void BM_SymbolizeOneStack(benchmark::State& state) {
  std::uintptr_t frames[tleak::detail::kMaxStackDepth];
  const int depth = tleak::detail::capture_stack(frames, 12, 0);
  for (auto _ : state) {
    tleak::Symbolizer symbolizer;
    benchmark::DoNotOptimize(symbolizer.symbolize({frames, static_cast<std::size_t>(depth)}));
  }
}
BENCHMARK(BM_SymbolizeOneStack)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
