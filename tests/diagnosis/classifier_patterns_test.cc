// Patterns users meet, each with the verdict it deserves under default thresholds. Every series is
// driven through the recorder exactly (SeriesDriver sets a site's live bytes at each mark), so the
// classifier is judged on the shape alone. The rules these pin are written in the README's
// "What the words mean".
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "synthetic_run.h"

namespace tleak::diagnosis {
namespace {

using testing::finding;
using testing::SyntheticRun;

constexpr std::uint32_t kSite = 0, kScratch = 1;

// Holds a site at a chosen number of live bytes per iteration: grows by allocating the difference,
// shrinks by freeing the newest blocks. Every block is read once per iteration (live data, not dead).
class SeriesDriver {
 public:
  explicit SeriesDriver(SyntheticRun& run) : run_(run) {}

  void step(std::int64_t target) {
    run_.tick();
    while (!blocks_.empty() && live_ > target) {
      live_ -= blocks_.back().second;
      run_.free(blocks_.back().first);
      blocks_.pop_back();
    }
    if (target > live_) {
      const auto size = static_cast<std::size_t>(target - live_);
      blocks_.emplace_back(run_.allocate(kSite, size), size);
      live_ = target;
    }
    run_.tick();
    for (const auto& [id, size] : blocks_) run_.use(id);
    run_.mark();
  }
  void release() {
    for (const auto& [id, size] : blocks_) run_.free(id);
    blocks_.clear();
  }

 private:
  SyntheticRun& run_;
  std::vector<std::pair<std::uint64_t, std::int64_t>> blocks_;
  std::int64_t live_ = 0;
};

template <class Shape>
SiteFinding drive(int iterations, Shape shape) {
  SyntheticRun run;
  SeriesDriver driver(run);
  for (int i = 1; i <= iterations; ++i) driver.step(shape(i));
  driver.release();
  const Diagnosis d = run.classify();
  return finding(d, kSite);
}

// --- Growth that the whole-run fit dilutes ---------------------------------------------------

class LateGrowth : public ::testing::TestWithParam<int> {};

// Flat for most of the run, then 4 KiB more every iteration: the run ends rising, so it is growth,
// and the slope reported is that of the rise, not of the whole run.
TEST_P(LateGrowth, IsGrowthAtTheLateSlope) {
  const int onset = GetParam();
  const SiteFinding f = drive(100, [&](int i) { return 64 * 1024 + 4096 * std::max(0, i - onset); });
  EXPECT_EQ(f.verdict, Verdict::kGrowth) << f.reason;
  EXPECT_NEAR(f.growth.slope_bytes_per_iteration, 4096.0, 1.0) << f.reason;
  EXPECT_GE(f.growth.first_iteration, static_cast<std::uint64_t>(onset)) << f.reason;
  EXPECT_LE(f.growth.first_iteration, static_cast<std::uint64_t>(onset) + 1) << f.reason;
  EXPECT_EQ(f.growth.last_iteration, 100u);
  EXPECT_NE(f.reason.find("since iteration"), std::string::npos) << f.reason;
}

// Growth that starts in the last 30%, 20% and 10% of the run.
INSTANTIATE_TEST_SUITE_P(OnsetLate, LateGrowth, ::testing::Values(70, 80, 90));

TEST(ClassifierPatterns, GeometricCapacityDoublingIsGrowth) {
  // A buffer of 256-byte entries, one more per iteration, whose capacity doubles when full: live
  // bytes are flat between doublings, and each flat stretch is twice the last.
  const SiteFinding f = drive(100, [](int i) {
    std::int64_t capacity = 16;
    while (capacity < i) capacity *= 2;
    return capacity * 256;
  });
  EXPECT_EQ(f.verdict, Verdict::kGrowth) << f.reason;
  EXPECT_FALSE(f.growth.plateau_iteration.has_value());
  EXPECT_GT(f.growth.slope_bytes_per_iteration, 0.0);
}

TEST(ClassifierPatterns, StepsAtRegularIntervalsAreGrowth) {
  // A cache that gains 64 KiB every 20 iterations: the run ends on a flat stretch no longer than
  // the ones between steps, which is no plateau.
  const SiteFinding f = drive(200, [](int i) { return std::int64_t{64 * 1024} * (i / 20); });
  EXPECT_EQ(f.verdict, Verdict::kGrowth) << f.reason;
  EXPECT_NEAR(f.growth.slope_bytes_per_iteration, 64.0 * 1024 / 20, 64.0 * 1024 / 20 * 0.1);
}

TEST(ClassifierPatterns, GrowthUnderNoiseIsGrowth) {
  // 1 KiB per iteration under +-48 KiB of noise: Kendall's tau is only about 0.5, yet over 100
  // iterations a trend that strong is not chance.
  std::mt19937 rng(11);
  std::uniform_int_distribution<std::int64_t> noise(0, 96 * 1024);
  const SiteFinding f = drive(100, [&](int i) { return std::int64_t{1024} * i + noise(rng); });
  EXPECT_GE(f.growth.confidence, 0.35);
  EXPECT_LE(f.growth.confidence, 0.65);
  EXPECT_EQ(f.verdict, Verdict::kGrowth) << f.reason;
  EXPECT_NEAR(f.growth.slope_bytes_per_iteration, 1024.0, 400.0);
}

TEST(ClassifierPatterns, RatchetIsGrowth) {
  // Each cycle of 8 iterations fills a 16 KiB-per-iteration buffer and empties it, but 2 KiB per
  // iteration stays behind: the troughs climb.
  const SiteFinding f = drive(120, [](int i) { return std::int64_t{2048} * i + std::int64_t{16384} * (i % 8); });
  EXPECT_EQ(f.verdict, Verdict::kGrowth) << f.reason;
  EXPECT_NEAR(f.growth.slope_bytes_per_iteration, 2048.0, 2048.0 * 0.25);
}

// --- Flattening late -------------------------------------------------------------------------

TEST(ClassifierPatterns, PlateauReachedInTheLastFifteenPercentIsBounded) {
  const SiteFinding f = drive(100, [](int i) { return std::int64_t{4096} * std::min(i, 85); });
  EXPECT_EQ(f.verdict, Verdict::kBounded) << f.reason;
  ASSERT_TRUE(f.growth.plateau_iteration.has_value()) << f.reason;
  EXPECT_EQ(*f.growth.plateau_iteration, 85u);
}

TEST(ClassifierPatterns, OneStepThenLevelIsAPlateau) {
  // A second compiled shape at iteration 15 of 20: one rise, then level. Most pairs of samples
  // tie, which must neither make it growth nor hide the rise in the reason.
  const SiteFinding f = drive(20, [](int i) { return std::int64_t{16384} * (i < 15 ? 1 : 3); });
  EXPECT_EQ(f.verdict, Verdict::kBounded) << f.reason;
  ASSERT_TRUE(f.growth.plateau_iteration.has_value()) << f.reason;
  EXPECT_EQ(*f.growth.plateau_iteration, 15u);
  EXPECT_NE(f.reason.find("rose by 32.0 KiB"), std::string::npos) << f.reason;
}

// A module's import: one rise, level for six samples, then a little of it freed as the program
// exits (the last sample). The fall at the end is no rise: the level before it is the plateau, not
// a pause between steps (`tleak run -- python3 -c "import torch"` had called a dozen such sites
// growth).
TEST(ClassifierPatterns, OneStepThenLevelThenAFallAtTheEndIsAPlateau) {
  const SiteFinding f = drive(18, [](int i) -> std::int64_t { return i < 12 ? 0 : i < 18 ? 55450 : 54181; });
  EXPECT_EQ(f.verdict, Verdict::kBounded) << f.reason;
  ASSERT_TRUE(f.growth.plateau_iteration.has_value()) << f.reason;
  EXPECT_EQ(*f.growth.plateau_iteration, 12u);
}

// Steps at regular intervals stay growth when the last sample falls: the flat stretch before the
// fall is no longer than the pauses between the steps.
TEST(ClassifierPatterns, StepsAtRegularIntervalsThenAFallAtTheEndAreGrowth) {
  const SiteFinding f = drive(200, [](int i) { return std::int64_t{64 * 1024} * (i / 20) - (i == 200 ? 4096 : 0); });
  EXPECT_EQ(f.verdict, Verdict::kGrowth) << f.reason;
  EXPECT_NEAR(f.growth.slope_bytes_per_iteration, 64.0 * 1024 / 20, 64.0 * 1024 / 20 * 0.1);
}

// A program sampled by time is sampled on through its exit: what its loop kept (outputs in a list,
// kept from sample 31 of 42 on) is freed as the interpreter finalizes, in the last sample or two.
// The rise before that fall is growth, fitted up to the last sample before it.
TEST(ClassifierPatterns, GrowthFreedInTheLastSamplesAsTheProgramExitsIsGrowth) {
  for (const int freed : {1, 2}) {
    const int last = 42 - freed;
    const SiteFinding f = drive(42, [&](int i) -> std::int64_t { return i <= 31 || i > last ? 0 : 5300 * (i - 31); });
    EXPECT_EQ(f.verdict, Verdict::kGrowth) << freed << ": " << f.reason;
    EXPECT_NEAR(f.growth.slope_bytes_per_iteration, 5300.0, 5300.0 * 0.05) << f.reason;
    EXPECT_EQ(f.growth.last_iteration, static_cast<std::uint64_t>(last)) << f.reason;
  }
}

// What is cut is only a fast fall at the very end: a rise that ebbs over the last third is no
// growth, nor is a cache that filled, stayed level, and was emptied as the program ended.
TEST(ClassifierPatterns, ASlowFallOrAPlateauEmptiedAtTheEndIsNoGrowth) {
  const SiteFinding ebb = drive(60, [](int i) -> std::int64_t { return 4096 * (i <= 40 ? i : 80 - i); });
  EXPECT_EQ(ebb.verdict, Verdict::kBounded) << ebb.reason;
  const SiteFinding emptied = drive(60, [](int i) -> std::int64_t { return i == 60 ? 0 : 4096 * std::min(i, 20); });
  EXPECT_EQ(emptied.verdict, Verdict::kBounded) << emptied.reason;
  ASSERT_TRUE(emptied.growth.plateau_iteration.has_value()) << emptied.reason;
  EXPECT_EQ(*emptied.growth.plateau_iteration, 20u);
  // A fall into a level of more than the last two samples is part of the series: one step up,
  // and down again for the last three of forty.
  const SiteFinding down = drive(40, [](int i) -> std::int64_t { return i < 10 ? 0 : i <= 37 ? 65536 : 60000; });
  EXPECT_EQ(down.growth.last_iteration, 40u) << down.reason;
  EXPECT_EQ(down.verdict, Verdict::kBounded) << down.reason;
}

// A module imported while the program was sampled by time: one step up, level for ten samples,
// and a little of it freed in the last two as the program exits. A plateau, not a pause between
// steps (`tleak run -- python3 serve.py` had called torch's `_decomp/__init__.py:175` growth).
TEST(ClassifierPatterns, AStepLevelThenALittleFreedInTheLastTwoSamplesIsAPlateau) {
  const SiteFinding f = drive(30, [](int i) -> std::int64_t { return i < 19 ? 0 : i <= 28 ? 36592 : 35768; });
  EXPECT_EQ(f.verdict, Verdict::kBounded) << f.reason;
  ASSERT_TRUE(f.growth.plateau_iteration.has_value()) << f.reason;
  EXPECT_EQ(*f.growth.plateau_iteration, 19u);
}

// Modules a short PyTorch run imported lazily while it was sampled by time (its DataLoader's, 10
// samples of 100 ms): steps at torch's import site, the longest pause between them two samples,
// then level for the last four. Level for twice as long as it ever paused is a plateau (it was
// called growth, "+4.6 KiB per 100 ms at torch/__init__.py:218"); steps with longer pauses stay
// growth (StepsAtRegularIntervals... above).
TEST(ClassifierPatterns, StepsThenLevelForTwiceTheLongestPauseIsAPlateau) {
  const std::int64_t series[] = {0, 0, 43680, 52000, 52000, 53040, 70720, 70720, 70720, 70720};
  const SiteFinding f = drive(10, [&](int i) { return series[i - 1]; });
  EXPECT_EQ(f.verdict, Verdict::kBounded) << f.reason;
  ASSERT_TRUE(f.growth.plateau_iteration.has_value()) << f.reason;
  EXPECT_EQ(*f.growth.plateau_iteration, 7u);
}

TEST(ClassifierPatterns, PlateauAfterNoisyRiseIsBounded) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<std::int64_t> noise(0, 2048);
  const SiteFinding f = drive(100, [&](int i) { return std::int64_t{8192} * std::min(i, 60) + noise(rng); });
  EXPECT_EQ(f.verdict, Verdict::kBounded) << f.reason;
}

// --- Below the thresholds: said, never "no trend" -------------------------------------------

TEST(ClassifierPatterns, SlowSteadyRiseBelowTheMinimumSaysSo) {
  // 64 B per iteration for 20 iterations: a perfect trend, 1 KiB in all, under the 4 KiB a growth
  // verdict needs. Bounded, and the reason gives the slope and the threshold it missed.
  const SiteFinding f = drive(20, [](int i) { return std::int64_t{64} * i; });
  EXPECT_EQ(f.verdict, Verdict::kBounded) << f.reason;
  EXPECT_DOUBLE_EQ(f.growth.slope_bytes_per_iteration, 64.0);
  EXPECT_DOUBLE_EQ(f.growth.confidence, 1.0);
  EXPECT_EQ(f.reason.find("no trend"), std::string::npos) << f.reason;
  EXPECT_NE(f.reason.find("64 B per iteration"), std::string::npos) << f.reason;
  EXPECT_NE(f.reason.find("below"), std::string::npos) << f.reason;
}

TEST(ClassifierPatterns, SlowSteadyRiseBecomesGrowthWhenTheRunIsLongEnough) {
  const SiteFinding f = drive(200, [](int i) { return std::int64_t{64} * i; });
  EXPECT_EQ(f.verdict, Verdict::kGrowth) << f.reason;
  EXPECT_DOUBLE_EQ(f.growth.slope_bytes_per_iteration, 64.0);
}

// --- Memory held dead -------------------------------------------------------------------------

constexpr std::size_t kBig = 8 << 20;

// A few small temporaries per op, used by the next op: how a loop body works.
void busy_ops(SyntheticRun& run, int ops) {
  for (int k = 0; k < ops; ++k) {
    run.tick();
    const auto t = run.allocate(kScratch, 256);
    run.use(t);
    run.free(t);
  }
}

TEST(ClassifierPatterns, DeadForAThousandOpsInsideEachStepIsRetained) {
  // 8 MiB written and read at the start of each step, then held through 1,000 ops until the step
  // ends: it never crosses an iteration mark, but 8 MiB of every step's peak is dead.
  SyntheticRun run;
  for (int i = 0; i < 20; ++i) {
    run.tick();
    const auto big = run.allocate(kSite, kBig);
    run.tick();
    run.use(big);
    busy_ops(run, 1000);
    run.free(big);
    run.mark();
  }
  const Diagnosis d = run.classify();
  const SiteFinding& f = finding(d, kSite);
  EXPECT_EQ(f.verdict, Verdict::kRetained) << f.reason;
  EXPECT_EQ(f.retained.drag_iterations_max, 0u);
  EXPECT_EQ(f.retained.drag_ops_max, 1000u);
  EXPECT_EQ(f.retained.peak_dead_bytes, static_cast<std::int64_t>(kBig));
  EXPECT_NE(f.reason.find("8.0 MiB"), std::string::npos) << f.reason;
  EXPECT_EQ(finding(d, kScratch).verdict, Verdict::kBounded) << finding(d, kScratch).reason;
}

TEST(ClassifierPatterns, DeadForJustUnderHalfTheRunIsRetained) {
  SyntheticRun run;
  run.tick();
  const auto big = run.allocate(kSite, kBig);
  for (int i = 1; i <= 100; ++i) {
    if (i <= 52) run.use(big);  // read for 52 iterations, then only held
    busy_ops(run, 10);
    run.mark();
  }
  run.free(big);
  const Diagnosis d = run.classify();
  const SiteFinding& f = finding(d, kSite);
  EXPECT_GT(f.retained.drag_share, 0.45);
  EXPECT_LT(f.retained.drag_share, 0.5);
  EXPECT_EQ(f.verdict, Verdict::kRetained) << f.reason;
  EXPECT_EQ(f.retained.drag_iterations_max, 49u);  // last read during iteration 52, freed after mark 100
}

TEST(ClassifierPatterns, NeverUsedIsRetainedForItsWholeLife) {
  SyntheticRun run;
  run.tick();
  const auto big = run.allocate(kSite, kBig);  // written by nobody, read by nobody
  for (int i = 0; i < 50; ++i) {
    busy_ops(run, 10);
    run.mark();
  }
  run.free(big);
  const Diagnosis d = run.classify();
  const SiteFinding& f = finding(d, kSite);
  EXPECT_EQ(f.verdict, Verdict::kRetained) << f.reason;
  EXPECT_DOUBLE_EQ(f.retained.drag_share, 1.0);
  EXPECT_EQ(f.retained.peak_dead_bytes, static_cast<std::int64_t>(kBig));
  EXPECT_EQ(f.retained.peak_if_freed_at_last_use_bytes, static_cast<std::int64_t>(kBig));  // at its allocation
}

TEST(ClassifierPatterns, WeightsUsedEveryStepAndFreedAtTeardownAreBounded) {
  // Dead only between the last step and teardown: a small share of a long life.
  SyntheticRun run;
  run.tick();
  const auto weights = run.allocate(kSite, kBig);
  for (int i = 0; i < 50; ++i) {
    run.use(weights);
    busy_ops(run, 40);
    run.mark();
  }
  run.tick();
  run.free(weights);
  const Diagnosis d = run.classify();
  EXPECT_EQ(finding(d, kSite).verdict, Verdict::kBounded) << finding(d, kSite).reason;
}

TEST(ClassifierPatterns, ResultReadByTheNextOpIsBounded) {
  // 1 MiB results, each read by the op after the one that wrote it and freed right after: dead for
  // no op at all.
  SyntheticRun run;
  for (int i = 0; i < 30; ++i) {
    run.tick();
    const auto out = run.allocate(kSite, 1 << 20);
    run.use(out);
    run.tick();
    run.use(out);
    run.free(out);
    busy_ops(run, 20);
    run.mark();
  }
  const Diagnosis d = run.classify();
  const SiteFinding& f = finding(d, kSite);
  EXPECT_EQ(f.verdict, Verdict::kBounded) << f.reason;
  EXPECT_EQ(f.retained.peak_dead_bytes, 0);
}

}  // namespace
}  // namespace tleak::diagnosis
