// tleak diff on big reports: two reports of 100,000 sites each (six frames per site, as deep stacks
// give), read from disk, parsed, matched by frames and rendered.
// Run: build/release/bench/diff_benchmark
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "tleak/diagnosis/diff.h"
#include "tleak/diagnosis/report_json.h"

namespace {

using namespace tleak::diagnosis;

Report big_report(std::size_t sites, std::uint64_t seed) {
  Report r;
  r.run.scenario = "big";
  r.run.variant = "leaky";
  r.run.mode = "eager";
  r.run.iterations = 100;
  for (std::size_t i = 0; i < sites; ++i) {
    SiteReport s;
    s.id = static_cast<std::uint32_t>(i);
    s.verdict = (i + seed) % 50 == 0 ? "growth" : "bounded";
    s.label = "model::layer_" + std::to_string(i) + " (layers.cc:" + std::to_string(i % 900) + ")";
    for (int f = 0; f < 6; ++f) {
      s.frames.push_back(tleak::Frame{0x400000 + i * 64 + static_cast<std::size_t>(f) + seed * 0x1000,
                                      "model::Layer" + std::to_string(i % 1000) + "::forward_" + std::to_string(i / 1000) + "_" + std::to_string(f) + "(tleak::runtime::Tensor const&)",
                                      "libmodel.so", i * 64 + static_cast<std::size_t>(f), "/src/model/layers.cc", static_cast<int>(i % 900)});
    }
    s.peak_live_bytes = static_cast<std::int64_t>((i * 37 + seed) % 100000);
    s.final_live_bytes = s.peak_live_bytes / 2;
    s.growth.slope_bytes_per_iteration = s.verdict == "growth" ? 1000.0 + static_cast<double>(seed) : 0;
    r.sites.push_back(std::move(s));
  }
  return r;
}

void BM_Diff100kSites(benchmark::State& state) {
  const auto dir = std::filesystem::temp_directory_path() / ("tleak-diff-bench-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string a = (dir / "a.json").string(), b = (dir / "b.json").string();
  std::ofstream(a) << to_json(big_report(100000, 0)).dump();
  std::ofstream(b) << to_json(big_report(100000, 7)).dump();
  state.counters["file_MiB"] = static_cast<double>(std::filesystem::file_size(a)) / (1 << 20);
  for (auto _ : state) {
    const Diff diff = diff_report_files(a, b, false);
    benchmark::DoNotOptimize(render_text(diff));
  }
  if (!std::getenv("TLEAK_KEEP_BENCH_FILES")) std::filesystem::remove_all(dir);
}
BENCHMARK(BM_Diff100kSites)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
