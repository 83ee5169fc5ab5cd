#include "tleak/diagnosis/classifier.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <stdexcept>
#include <string>

#include "synthetic_run.h"

namespace tleak::diagnosis {
namespace {

using testing::finding;
using testing::SyntheticRun;

constexpr std::uint32_t kWeights = 0, kTemp = 1, kKept = 2;

// Weights made once; per iteration a temp is made, used by the next op and freed right after.
void clean_iteration(SyntheticRun& run, std::size_t temp_bytes) {
  run.tick();
  const auto t = run.allocate(kTemp, temp_bytes);
  run.use(t);
  run.tick();
  run.use(t);
  run.free(t);
}

TEST(Classifier, CleanLoopIsBoundedWithNothingLeaked) {
  SyntheticRun run;
  run.tick();
  const auto w = run.allocate(kWeights, 4096);
  run.use(w);
  for (int i = 0; i < 50; ++i) {
    clean_iteration(run, 64 * 1024);
    run.use(w);
    run.mark();
  }
  run.free(w);  // teardown
  const Diagnosis d = run.classify();
  ASSERT_EQ(d.sites.size(), 2u);
  for (const SiteFinding& f : d.sites) {
    EXPECT_EQ(f.verdict, Verdict::kBounded) << f.reason;
    EXPECT_EQ(f.leaked_bytes, 0);
  }
  EXPECT_EQ(finding(d, kTemp).peak_live_bytes, 64 * 1024);
  EXPECT_EQ(finding(d, kTemp).retained.drag_ops_max, 0u);
  EXPECT_FALSE(finding(d, kTemp).growth.plateau_iteration.has_value());
  EXPECT_NEAR(finding(d, kTemp).growth.slope_bytes_per_iteration, 0.0, 1e-9);
}

TEST(Classifier, ListThatKeepsEveryResultIsGrowthAtTheAppendedBytesPerIteration) {
  SyntheticRun run;
  std::vector<std::uint64_t> kept;
  for (int i = 0; i < 40; ++i) {
    clean_iteration(run, 8192);
    run.tick();
    kept.push_back(run.allocate(kKept, 3000));
    run.use(kept.back());
    run.mark();
  }
  for (auto k : kept) run.free(k);  // the list dies at teardown
  const Diagnosis d = run.classify();
  const SiteFinding& f = finding(d, kKept);
  EXPECT_EQ(f.verdict, Verdict::kGrowth) << f.reason;
  EXPECT_DOUBLE_EQ(f.growth.slope_bytes_per_iteration, 3000.0);
  EXPECT_DOUBLE_EQ(f.growth.confidence, 1.0);
  EXPECT_EQ(f.leaked_bytes, 0);
  EXPECT_EQ(d.sites.front().site, SiteId(kKept));  // worst first
  EXPECT_EQ(finding(d, kTemp).verdict, Verdict::kBounded);
  EXPECT_DOUBLE_EQ(d.total_growth.slope_bytes_per_iteration, 3000.0);
  // Fitted after warm-up: 10% of 40 iterations.
  EXPECT_EQ(f.growth.first_iteration, 5u);
  EXPECT_EQ(f.growth.last_iteration, 40u);
}

TEST(Classifier, BlocksNeverFreedAreALeakOfExactlyTheirBytes) {
  SyntheticRun run;
  for (int i = 0; i < 10; ++i) {
    clean_iteration(run, 1024);
    run.tick();
    if (i % 3 == 0) run.use(run.allocate(kKept, 777));  // lost: nothing frees it
    run.mark();
  }
  const Diagnosis d = run.classify();
  const SiteFinding& f = finding(d, kKept);
  EXPECT_EQ(f.verdict, Verdict::kLeak);
  EXPECT_EQ(f.leaked_bytes, 4 * 777);
  EXPECT_EQ(f.leaked_blocks, 4);
  EXPECT_EQ(d.sites.front().verdict, Verdict::kLeak);
}

TEST(Classifier, SawtoothFromADeferredCollectorIsRetainedNotGrowth) {
  // Each call returns a 32 KiB result that is used once; a collector frees them every 8 calls.
  SyntheticRun run;
  std::vector<std::uint64_t> pending;
  for (int i = 0; i < 64; ++i) {
    run.tick();
    pending.push_back(run.allocate(kKept, 32 * 1024));
    run.use(pending.back());
    run.tick(3);
    if (pending.size() == 8) {
      for (auto p : pending) run.free(p);
      pending.clear();
    }
    run.mark();
  }
  const Diagnosis d = run.classify();
  const SiteFinding& f = finding(d, kKept);
  EXPECT_EQ(f.verdict, Verdict::kRetained) << f.reason;
  EXPECT_LT(f.growth.confidence, 0.6);
  EXPECT_EQ(f.peak_live_bytes, 8 * 32 * 1024);
  // The oldest of each batch is used at its step's first op and freed 7 steps of 4 ops later,
  // at the last op of the eighth step.
  EXPECT_EQ(f.retained.drag_iterations_max, 7u);
  EXPECT_EQ(f.retained.drag_ops_max, 31u);
  EXPECT_EQ(f.retained.peak_dead_bytes, 8 * 32 * 1024);
  // Freed at last use, each result would be alone.
  EXPECT_EQ(f.retained.peak_if_freed_at_last_use_bytes, 32 * 1024);
}

TEST(Classifier, CacheThatFillsThenStopsIsBoundedWithItsPlateau) {
  // A compile cache gains an entry per new shape for 30 iterations, then every shape is known.
  SyntheticRun run;
  std::vector<std::uint64_t> cache;
  for (int i = 0; i < 100; ++i) {
    clean_iteration(run, 2048);
    if (i < 30) {
      run.tick();
      cache.push_back(run.allocate(kKept, 10000));
      run.use(cache.back());
    }
    for (auto c : cache) run.use(c);
    run.mark();
  }
  for (auto c : cache) run.free(c);
  const Diagnosis d = run.classify();
  const SiteFinding& f = finding(d, kKept);
  EXPECT_EQ(f.verdict, Verdict::kBounded) << f.reason;
  ASSERT_TRUE(f.growth.plateau_iteration.has_value());
  EXPECT_EQ(*f.growth.plateau_iteration, 30u);
  EXPECT_NE(f.reason.find("flat from iteration 30"), std::string::npos) << f.reason;
}

TEST(Classifier, BlockUsedOnceAndHeldToTheEndIsRetained) {
  SyntheticRun run;
  run.tick();
  const auto big = run.allocate(kKept, 1 << 20);
  run.use(big);  // its only use
  for (int i = 0; i < 20; ++i) {
    clean_iteration(run, 4096);
    run.mark();
  }
  run.tick();
  run.free(big);  // held until teardown
  const Diagnosis d = run.classify();
  const SiteFinding& f = finding(d, kKept);
  EXPECT_EQ(f.verdict, Verdict::kRetained) << f.reason;
  EXPECT_EQ(f.retained.drag_ops_max, 41u);  // 20 iterations of 2 ops, then the teardown op
  EXPECT_EQ(f.retained.drag_iterations_max, 20u);
  EXPECT_EQ(f.retained.peak_dead_bytes, 1 << 20);
  EXPECT_EQ(f.retained.peak_if_freed_at_last_use_bytes, 1 << 20);  // alive at its one use
  EXPECT_EQ(d.sites.front().site, SiteId(kKept));
}

TEST(Classifier, NoiseAroundAFlatLineIsBounded) {
  SyntheticRun run;
  std::mt19937 rng(3);
  std::vector<std::uint64_t> held;
  for (int i = 0; i < 200; ++i) {
    // Between 0 and 20 blocks of 1 KiB live at each mark, at random.
    const std::size_t want = rng() % 21;
    while (held.size() > want) {
      run.free(held.back());
      held.pop_back();
    }
    while (held.size() < want) {
      run.tick();
      held.push_back(run.allocate(kKept, 1024));
      run.use(held.back());
    }
    run.tick();
    for (auto h : held) run.use(h);  // live data the step reads: not dead
    run.mark();
  }
  for (auto h : held) run.free(h);
  const Diagnosis d = run.classify();
  const SiteFinding& f = finding(d, kKept);
  EXPECT_EQ(f.verdict, Verdict::kBounded) << f.reason;
  EXPECT_LT(std::abs(f.growth.confidence), 0.2);
  EXPECT_LT(std::abs(f.growth.slope_bytes_per_iteration), 20.0);
}

TEST(Classifier, LinearLeakWithOutliersKeepsItsSlope) {
  // 2 KiB per iteration, with every seventh sample spiking by 1 MiB of short-lived scratch.
  SyntheticRun run;
  std::vector<std::uint64_t> kept;
  for (int i = 0; i < 70; ++i) {
    run.tick();
    kept.push_back(run.allocate(kKept, 2048));
    run.use(kept.back());
    std::uint64_t spike = 0;
    if (i % 7 == 3) {
      spike = run.allocate(kKept, 1 << 20);
      run.use(spike);
    }
    run.mark();
    if (spike != 0) run.free(spike);
  }
  for (auto k : kept) run.free(k);
  const Diagnosis d = run.classify();
  const SiteFinding& f = finding(d, kKept);
  EXPECT_EQ(f.verdict, Verdict::kGrowth) << f.reason;
  EXPECT_NEAR(f.growth.slope_bytes_per_iteration, 2048.0, 2048.0 * 0.02);
}

TEST(Classifier, TooFewIterationsAreNotAssessedForGrowth) {
  SyntheticRun run;
  std::vector<std::uint64_t> kept;
  for (int i = 0; i < 4; ++i) {
    run.tick();
    kept.push_back(run.allocate(kKept, 100000));
    run.use(kept.back());
    run.mark();
  }
  for (auto k : kept) run.free(k);
  const Diagnosis d = run.classify();
  EXPECT_FALSE(finding(d, kKept).growth.assessed);
  EXPECT_NE(finding(d, kKept).verdict, Verdict::kGrowth);
}

TEST(Classifier, WithoutUseReportsDragIsNotMeasured) {
  RecorderLimits no_uses;  // a program's malloc: nobody says when a block is used
  no_uses.uses_reported = false;
  SyntheticRun run(no_uses);
  run.tick();
  const auto big = run.allocate(kKept, 1 << 20);
  for (int i = 0; i < 20; ++i) run.mark();
  run.free(big);
  const Diagnosis d = run.classify();
  EXPECT_FALSE(finding(d, kKept).retained.measured);
  EXPECT_EQ(finding(d, kKept).retained.peak_dead_bytes, 0);
  EXPECT_EQ(finding(d, kKept).retained.peak_if_freed_at_last_use_bytes, 1 << 20);
  EXPECT_EQ(finding(d, kKept).verdict, Verdict::kBounded);
}

TEST(Classifier, ThresholdsAreOptions) {
  SyntheticRun run;
  std::vector<std::uint64_t> kept;
  for (int i = 0; i < 40; ++i) {
    run.tick();
    kept.push_back(run.allocate(kKept, 100));  // 4 KB over the run: under the default rise
    run.use(kept.back());
    run.mark();
  }
  for (auto k : kept) run.free(k);
  ClassifierOptions strict;
  strict.growth_min_rise_bytes = 1000;
  const Recording recording = run.finish();
  EXPECT_EQ(finding(classify(recording, {}), kKept).verdict, Verdict::kBounded);
  EXPECT_EQ(finding(classify(recording, strict), kKept).verdict, Verdict::kGrowth);
}


// Most sites of a large program do not vary after the warm-up; the classifier fits one such series
// for all of them. Every finding must be what a fit of its own series gives.
void expect_same_fit(const GrowthFigures& got, const GrowthFigures& want, std::uint32_t site) {
  SCOPED_TRACE("site " + std::to_string(site));
  EXPECT_EQ(got.assessed, want.assessed);
  EXPECT_EQ(got.slope_bytes_per_iteration, want.slope_bytes_per_iteration);
  EXPECT_EQ(got.confidence, want.confidence);
  EXPECT_EQ(got.tail_slope_bytes_per_iteration, want.tail_slope_bytes_per_iteration);
  EXPECT_EQ(got.rise_bytes, want.rise_bytes);
  EXPECT_EQ(got.samples, want.samples);
  EXPECT_EQ(got.first_iteration, want.first_iteration);
  EXPECT_EQ(got.last_iteration, want.last_iteration);
  EXPECT_EQ(got.plateau_iteration, want.plateau_iteration);
  EXPECT_EQ(got.trend_z, want.trend_z);
  EXPECT_EQ(got.net_change_bytes, want.net_change_bytes);
  EXPECT_EQ(got.tail_is_pause, want.tail_is_pause);
  EXPECT_EQ(got.late_onset, want.late_onset);
}

class FlatSitesFitLikeTheirOwnSeries : public ::testing::TestWithParam<int> {};

TEST_P(FlatSitesFitLikeTheirOwnSeries, EveryFindingEqualsTheFitOfItsSeries) {
  const int iterations = GetParam();  // 700 thins the samples and leaves the last mark unkept
  SyntheticRun run;
  run.allocate(1, 4096);           // flat from the start
  run.free(run.allocate(2, 100));  // zero throughout
  for (int i = 1; i <= iterations; ++i) {
    run.tick();
    if (i == 3) run.allocate(3, 512);                         // flat once the warm-up is over
    if (i == 2 || i == 4) run.free(run.allocate(5, 64));      // varied during the warm-up only
    if (i == iterations) run.allocate(6, 32);                 // differs at the last mark alone
    if (i % 3 == 0) run.allocate(7, 8);                       // growth
    if (i == iterations * 3 / 4) run.allocate(8, 256);        // a step after the warm-up, first seen then
    // Steps that share site 8's fit, or one of its two figures only (classify fits a step once).
    if (i == iterations * 3 / 4) run.allocate(9, 256);
    if (i == iterations * 3 / 4) run.allocate(10, 4096);
    if (i == iterations * 3 / 4 + 1) run.allocate(11, 256);
    if (i == iterations - 1) run.allocate(12, 256);            // late: a step the fit may call growth
    run.mark();
  }
  const Recording recording = run.finish();
  const Diagnosis d = classify(recording, {});
  std::vector<std::uint64_t> xs;
  for (const MarkSample& m : recording.marks) xs.push_back(m.iteration);
  const bool last_not_kept = recording.last_mark.iteration > recording.marks.back().iteration;
  EXPECT_EQ(last_not_kept, iterations == 700);
  if (last_not_kept) xs.push_back(recording.last_mark.iteration);
  for (std::uint32_t site : {1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12}) {
    const SiteRecord& s = recording.sites[site];
    std::vector<std::int64_t> series = s.series(recording.marks.size());
    const SiteFinding& f = finding(d, site);
    const bool constant = std::all_of(series.begin(), series.end(), [&](std::int64_t v) { return v == f.final_live_bytes; });
    EXPECT_EQ(f.mark_live_bytes.empty(), constant) << "site " << site;
    if (!constant) {
      EXPECT_EQ(f.mark_live_bytes, series) << "site " << site;
    }
    if (last_not_kept) series.push_back(s.last_mark_live_bytes);
    expect_same_fit(f.growth, fit_growth(xs, series, recording.iterations, {}), site);
  }
  EXPECT_NEAR(finding(d, 7).growth.slope_bytes_per_iteration, 8.0 / 3, 0.01);  // the fitted site fits
}

INSTANTIATE_TEST_SUITE_P(Classifier, FlatSitesFitLikeTheirOwnSeries, ::testing::Values(60, 700));

// A program's report lists its worst sites; the smallest bounded ones are added up, and the
// findings kept are the head of the full list.
TEST(Classifier, PastTheLimitTheSmallestBoundedSitesAreAddedUp) {
  SyntheticRun run;
  for (std::uint32_t site = 1; site <= 6; ++site) run.free(run.allocate(site, 100 * site));  // bounded, peak 100*site
  for (int i = 1; i <= 40; ++i) {
    run.tick();
    run.allocate(7, 64);  // growth
    run.allocate(8, 32);  // growth
    run.mark();
  }
  const Recording recording = run.finish();
  const Diagnosis all = classify(recording, {});
  ASSERT_EQ(all.sites.size(), 8u);
  EXPECT_EQ(all.omitted.sites, 0u);

  const Diagnosis four = classify(recording, {}, 4);
  ASSERT_EQ(four.sites.size(), 4u);
  for (std::size_t i = 0; i < four.sites.size(); ++i) {
    EXPECT_EQ(four.sites[i].site, all.sites[i].site) << i;
    EXPECT_EQ(four.sites[i].reason, all.sites[i].reason) << i;
  }
  EXPECT_EQ(four.sites[2].site, SiteId(6));
  EXPECT_EQ(four.sites[3].site, SiteId(5));
  EXPECT_EQ(four.omitted.sites, 4u);  // sites 1-4
  EXPECT_EQ(four.omitted.allocations, 4u);
  EXPECT_EQ(four.omitted.frees, 4u);
  EXPECT_EQ(four.omitted.bytes_allocated, 100 + 200 + 300 + 400);
  EXPECT_EQ(four.omitted.largest_peak_live_bytes, 400);

  // Leak, growth and retained sites are listed whatever the limit.
  const Diagnosis one = classify(recording, {}, 1);
  ASSERT_EQ(one.sites.size(), 2u);
  EXPECT_NE(one.sites[0].verdict, Verdict::kBounded);
  EXPECT_NE(one.sites[1].verdict, Verdict::kBounded);
  EXPECT_EQ(one.omitted.sites, 6u);
}

// Whatever the limit, the listed sites are the head of the full list and the omitted ones add up
// to its tail, with sites arriving in no particular order of peak and several of equal peak (the
// classifier keeps only the worst so far as it goes, never every site).
TEST(Classifier, EveryLimitListsTheHeadOfTheFullList) {
  SyntheticRun run;
  constexpr std::uint32_t kSites = 40;
  for (std::uint32_t site = 1; site <= kSites; ++site) {
    const std::uint64_t size = 16 + (site * 7919u) % 11 * 32;  // peaks repeat, out of order
    run.free(run.allocate(site, size));
  }
  for (int i = 1; i <= 30; ++i) {
    run.tick();
    run.allocate(kSites + 1, 64);  // growth: always listed
    run.mark();
  }
  const Recording recording = run.finish();
  const Diagnosis all = classify(recording, {});
  ASSERT_EQ(all.sites.size(), kSites + 1);
  for (std::size_t limit = 0; limit <= kSites + 2; ++limit) {
    const Diagnosis d = classify(recording, {}, limit);
    const std::size_t listed = std::max<std::size_t>(limit, 1);
    ASSERT_EQ(d.sites.size(), std::min<std::size_t>(listed, all.sites.size())) << limit;
    for (std::size_t i = 0; i < d.sites.size(); ++i) EXPECT_EQ(d.sites[i].site, all.sites[i].site) << limit << " " << i;
    std::uint64_t sites = 0, allocations = 0;
    std::int64_t bytes = 0, largest = 0;
    for (std::size_t i = d.sites.size(); i < all.sites.size(); ++i) {
      ++sites;
      allocations += all.sites[i].allocations;
      bytes += all.sites[i].bytes_allocated;
      largest = std::max(largest, all.sites[i].peak_live_bytes);
    }
    EXPECT_EQ(d.omitted.sites, sites) << limit;
    EXPECT_EQ(d.omitted.allocations, allocations) << limit;
    EXPECT_EQ(d.omitted.bytes_allocated, bytes) << limit;
    EXPECT_EQ(d.omitted.largest_peak_live_bytes, largest) << limit;
  }
}

// What the omitted sites still held at the end is added up too: their final live bytes, and the
// bytes the exit scan found reachable.
TEST(Classifier, OmittedSitesAddUpWhatTheyHeldAtExit) {
  SyntheticRun run;
  std::set<std::uint64_t> reachable;
  for (std::uint32_t site = 1; site <= 6; ++site) {
    const std::uint64_t block = run.allocate(site, 100 * site);
    if (site <= 2) {
      reachable.insert(block);  // held to the end, from a global say
    } else {
      run.free(block);
    }
  }
  for (int i = 1; i <= 40; ++i) {
    run.tick();
    reachable.insert(run.allocate(7, 256));  // growth
    run.mark();
  }
  const Diagnosis d = classify(run.finish_with_exit_scan(reachable), {}, 3);
  ASSERT_EQ(d.sites.size(), 3u);  // the growth site and the two largest bounded ones (6, 5)
  EXPECT_EQ(d.sites[0].verdict, Verdict::kGrowth);
  EXPECT_EQ(d.omitted.sites, 4u);  // sites 1-4
  EXPECT_EQ(d.omitted.allocations, 4u);
  EXPECT_EQ(d.omitted.frees, 2u);
  EXPECT_EQ(d.omitted.bytes_allocated, 100 + 200 + 300 + 400);
  EXPECT_EQ(d.omitted.largest_peak_live_bytes, 400);
  EXPECT_EQ(d.omitted.final_live_bytes, 100 + 200);
  EXPECT_EQ(d.omitted.reachable_at_exit_bytes, 100 + 200);
  EXPECT_EQ(d.omitted.unjudged_at_exit_bytes, 0);
}

// A site whose leaked bytes are under the leak threshold is bounded, yet never added up with the
// omitted ones (which carry no leaked bytes): the leaked total stays that of the listed sites.
TEST(Classifier, ASiteWithLeakedBytesIsListedWhateverTheLimit) {
  SyntheticRun run;
  for (std::uint32_t site = 1; site <= 4; ++site) run.free(run.allocate(site, 1000 * site));  // bounded
  run.allocate(5, 10);  // never freed: 10 bytes leaked, the smallest peak of all
  for (int i = 0; i < 3; ++i) {
    run.tick();
    run.mark();
  }
  ClassifierOptions options;
  options.leak_min_bytes = 100;
  const Diagnosis d = classify(run.finish(), options, 2);
  ASSERT_EQ(d.sites.size(), 2u);
  EXPECT_EQ(d.sites[0].site, SiteId(4));  // the largest bounded peak first
  EXPECT_EQ(d.sites[1].site, SiteId(5));
  EXPECT_EQ(d.sites[1].verdict, Verdict::kBounded);
  EXPECT_EQ(d.sites[1].leaked_bytes, 10);
  EXPECT_EQ(d.omitted.sites, 3u);  // sites 1-3
  EXPECT_EQ(d.omitted.largest_peak_live_bytes, 3000);
}

// Two diagnoses of one recording agree in every figure the report shows.
void expect_same_diagnosis(const Diagnosis& a, const Diagnosis& b, const std::string& context) {
  ASSERT_EQ(a.sites.size(), b.sites.size()) << context;
  for (std::size_t i = 0; i < a.sites.size(); ++i) {
    const SiteFinding& x = a.sites[i];
    const SiteFinding& y = b.sites[i];
    const std::string at = context + ", finding " + std::to_string(i);
    EXPECT_EQ(x.site, y.site) << at;
    EXPECT_EQ(x.verdict, y.verdict) << at;
    EXPECT_EQ(x.reason, y.reason) << at;
    EXPECT_EQ(x.leaked_bytes, y.leaked_bytes) << at;
    EXPECT_EQ(x.unfreed_bytes, y.unfreed_bytes) << at;
    EXPECT_EQ(x.peak_live_bytes, y.peak_live_bytes) << at;
    EXPECT_EQ(x.growth.slope_bytes_per_iteration, y.growth.slope_bytes_per_iteration) << at;
    EXPECT_EQ(x.growth.confidence, y.growth.confidence) << at;
    EXPECT_EQ(x.growth.plateau_iteration, y.growth.plateau_iteration) << at;
    EXPECT_EQ(x.mark_live_bytes, y.mark_live_bytes) << at;
  }
  EXPECT_TRUE(a.omitted == b.omitted) << context << ": omitted sites " << a.omitted.sites << " and "
                                      << b.omitted.sites << ", largest peaks " << a.omitted.largest_peak_live_bytes
                                      << " and " << b.omitted.largest_peak_live_bytes;
  EXPECT_EQ(a.total_growth.slope_bytes_per_iteration, b.total_growth.slope_bytes_per_iteration) << context;
  EXPECT_EQ(a.total_retained.drag_share, b.total_retained.drag_share) << context;
  EXPECT_EQ(a.total_retained.drag_ops_max, b.total_retained.drag_ops_max) << context;
}

// A program's sites are judged while it scans at exit, before the scan says which blocks leaked:
// the diagnosis from those judgements is the one made after it, whatever the leaks change (a
// bounded site turned leak, one listed for leaked bytes under the threshold, blocks reachable),
// at every limit of listed sites. Without uses, as a program's agent reports none (with them, the
// end adds the blocks left to their sites' drag).
TEST(Classifier, SitesJudgedBeforeTheExitScanGiveTheSameDiagnosis) {
  RecorderLimits limits;
  limits.uses_reported = false;
  SyntheticRun run(limits);
  std::set<std::uint64_t> reachable;
  for (std::uint32_t site = 1; site <= 30; ++site) {
    if (site % 7 == 0) continue;  // no allocations: no finding
    const std::uint64_t size = 16 + (site * 7919u) % 13 * 48;
    const std::uint64_t block = run.allocate(site, size);
    if (site % 5 == 0) continue;      // left at the end, unreachable: leaked
    if (site % 3 == 0) {
      reachable.insert(block);        // left at the end, reachable
      continue;
    }
    run.free(block);
  }
  // Leaks are ordered by their leaked bytes, not their peaks: 41 (1000 bytes) before 40 (300, peak
  // 5000).
  run.free(run.allocate(40, 5000));
  run.allocate(40, 300);
  run.allocate(41, 1000);
  for (int i = 1; i <= 40; ++i) {
    run.tick();
    reachable.insert(run.allocate(31, 256));  // growth
    run.free(run.allocate(32, 64 * (i % 4 + 1)));  // bounded, a sawtooth
    run.mark();
  }
  ClassifierOptions options;
  options.leak_min_bytes = 200;  // some of the leaking sites leak less: listed, bounded
  // How many of the best bounded sites the judgements keep: none (every site is read again), as
  // many as listed (too few once leaked bytes list some anyway: read again), with room, all.
  const std::vector<std::size_t> kept = {0, 1, 5, 12, 12 + kBestBoundedSpare, SIZE_MAX};
  std::vector<SiteJudgements> early;
  for (const std::size_t k : kept) early.push_back(run.judge_sites_now(options, k));
  const Recording recording = run.finish_with_exit_scan(reachable);
  ASSERT_FALSE(recording.leaked.empty());
  const Diagnosis all = classify(recording, options);
  bool some_leak = false, some_small_leak = false;
  for (const SiteFinding& f : all.sites) {
    some_leak = some_leak || f.verdict == Verdict::kLeak;
    some_small_leak = some_small_leak || (f.verdict == Verdict::kBounded && f.leaked_bytes > 0);
  }
  ASSERT_TRUE(some_leak);
  ASSERT_TRUE(some_small_leak);
  // The leaks first, by their leaked bytes.
  std::vector<std::int64_t> leaked;
  for (const SiteFinding& f : all.sites) {
    if (f.verdict == Verdict::kLeak) leaked.push_back(f.leaked_bytes);
  }
  ASSERT_EQ(all.sites[0].verdict, Verdict::kLeak);
  EXPECT_TRUE(std::is_sorted(leaked.rbegin(), leaked.rend()));
  EXPECT_EQ(finding(all, 40).leaked_bytes, 300);
  for (std::size_t limit = 0; limit <= all.sites.size() + 1; ++limit) {
    // Every site read again: the reference.
    const Diagnosis reference = classify(recording, options, limit, iteration_words(), judge_sites(recording, options, 0));
    expect_same_diagnosis(classify(recording, options, limit), reference, "limit " + std::to_string(limit));
    for (std::size_t k = 0; k < kept.size(); ++k) {
      const std::string context = "limit " + std::to_string(limit) + ", best kept " + std::to_string(kept[k]);
      expect_same_diagnosis(classify(recording, options, limit, iteration_words(), early[k]), reference,
                            context + ", judged early");
      expect_same_diagnosis(
          classify(recording, options, limit, iteration_words(), judge_sites(recording, options, kept[k])), reference,
          context);
    }
  }
}

// Judgements of other sites than the recording's are refused, not read past their end.
TEST(Classifier, JudgementsOfAnotherRecordingAreRefused) {
  SyntheticRun run;
  run.free(run.allocate(1, 16));
  const SiteJudgements early = run.judge_sites_now();
  run.free(run.allocate(5, 16));  // sites 2-5 are new
  const Recording recording = run.finish();
  EXPECT_THROW(classify(recording, {}, 10, iteration_words(), early), std::invalid_argument);
}

}  // namespace
}  // namespace tleak::diagnosis

namespace tleak::diagnosis {
namespace {

// 100,000 iterations with an allocation and a free in each: the recording keeps a bounded number of
// samples and timeline points, and the growth it must find is still found.
TEST(Recorder, HundredThousandIterationsKeepBoundedState) {
  SyntheticRun run;
  std::vector<std::uint64_t> kept;
  for (int i = 0; i < 100000; ++i) {
    clean_iteration(run, 512);
    if (i % 100 == 0) {
      kept.push_back(run.allocate(kKept, 1000));
      run.use(kept.back());
    }
    run.mark();
  }
  for (auto k : kept) run.free(k);
  const Recording recording = run.finish();
  EXPECT_EQ(recording.iterations, 100000u);
  EXPECT_LE(recording.marks.size(), 512u);
  EXPECT_GE(recording.marks.size(), 256u);
  EXPECT_EQ(recording.mark_stride, 256u);
  for (const SiteRecord& s : recording.sites) {
    EXPECT_EQ(s.series(recording.marks.size()).size(), recording.marks.size());
    ASSERT_TRUE(s.uses);
    EXPECT_LE(s.uses->needed.values(recording.ended_at.event).size(), 512u);
  }
  EXPECT_LE(recording.total_needed.values(recording.ended_at.event).size(), 4096u);
  const Diagnosis d = classify(recording, {});
  EXPECT_EQ(finding(d, kKept).verdict, Verdict::kGrowth);
  EXPECT_NEAR(finding(d, kKept).growth.slope_bytes_per_iteration, 10.0, 0.5);
}

// A program's events without a BlockInfo each (Recorder::allocated, freed) count exactly as the
// same events through on_allocate and on_free; a source that reports uses must give blocks.
TEST(Recorder, EventsWithoutABlockCountAsThoseWithOne) {
  RecorderLimits limits;
  limits.uses_reported = false;
  Recorder by_block({{"malloc", MemorySpace::kHost}}, limits), by_figures({{"malloc", MemorySpace::kHost}}, limits);
  const auto block = [](std::uint32_t site, std::uint64_t size) {
    BlockInfo b;
    b.site = SiteId(site);
    b.allocator = AllocatorId(0);
    b.size = size;
    return b;
  };
  const std::vector<std::pair<std::uint32_t, std::int64_t>> events = {{1, 100}, {2, 40}, {1, 60}, {1, -100}, {2, 8}, {2, -40}};
  std::uint64_t iteration = 0;
  for (const auto& [site, size] : events) {
    if (size > 0) {
      by_block.on_allocate(block(site, static_cast<std::uint64_t>(size)));
      by_figures.allocated(SiteId(site), AllocatorId(0), static_cast<std::uint64_t>(size));
    } else {
      by_block.on_free(FreeEvent{block(site, static_cast<std::uint64_t>(-size)), {}});
      by_figures.freed(SiteId(site), AllocatorId(0), static_cast<std::uint64_t>(-size));
    }
    ++iteration;
    by_block.mark(iteration, iteration, {});
    by_figures.mark(iteration, iteration, {});
  }
  const Recording a = by_block.finish({}, {}, {}), b = by_figures.finish({}, {}, {});
  ASSERT_EQ(a.sites.size(), 3u);
  ASSERT_EQ(b.sites.size(), 3u);
  for (std::size_t i = 1; i < 3; ++i) {
    EXPECT_EQ(a.sites[i].allocations, b.sites[i].allocations);
    EXPECT_EQ(a.sites[i].frees, b.sites[i].frees);
    EXPECT_EQ(a.sites[i].bytes_allocated, b.sites[i].bytes_allocated);
    EXPECT_EQ(a.sites[i].live_bytes, b.sites[i].live_bytes);
    EXPECT_EQ(a.sites[i].peak_live_bytes, b.sites[i].peak_live_bytes);
    EXPECT_EQ(a.sites[i].series(a.marks.size()), b.sites[i].series(b.marks.size()));
  }
  EXPECT_EQ(b.sites[1].peak_live_bytes, 160);
  EXPECT_EQ(b.sites[1].live_bytes, 60);
  EXPECT_EQ(b.sites[2].live_bytes, 8);
  EXPECT_EQ(b.peak_live_bytes, 200);
  EXPECT_EQ(a.peak_live_bytes, b.peak_live_bytes);
  EXPECT_EQ(b.allocations, 4u);
  EXPECT_EQ(b.frees, 2u);

  Recorder with_uses({{"pool", MemorySpace::kHost}});
  EXPECT_THROW(with_uses.allocated(SiteId(1), AllocatorId(0), 8), std::logic_error);
  EXPECT_THROW(with_uses.freed(SiteId(1), AllocatorId(0), 8), std::logic_error);
}

// Allocated and freed 100 times within one op: the freed-at-last-use figure never passes the peak.
TEST(Recorder, IdealPeakNeverPassesThePeak) {
  SyntheticRun run;
  for (int round = 0; round < 3; ++round) {
    run.tick();
    for (int i = 0; i < 100; ++i) {
      const auto b = run.allocate(kKept, 1000);
      run.use(b);
      run.free(b);
    }
    run.mark();
  }
  const Diagnosis d = run.classify();
  EXPECT_EQ(finding(d, kKept).peak_live_bytes, 1000);
  EXPECT_EQ(finding(d, kKept).retained.peak_if_freed_at_last_use_bytes, 1000);
  EXPECT_EQ(d.total_retained.peak_if_freed_at_last_use_bytes, 1000);
  EXPECT_EQ(d.total_retained.resolution_events, 1u);
}

// Inside one op a block is used for the last time before the next is allocated: freed at its last
// use, the two would never be live together. Exact at event order, not at op granularity.
TEST(Recorder, IdealPeakIsExactAtEventOrderInsideAnOp) {
  SyntheticRun run;
  for (int i = 0; i < 10; ++i) {
    run.tick();  // one op: read a's result, then write b's
    const auto a = run.allocate(kKept, 4096);
    run.use(a);
    const auto b = run.allocate(kTemp, 8192);
    run.free(a);
    run.use(b);
    run.free(b);
    run.mark();
  }
  const Diagnosis d = run.classify();
  EXPECT_EQ(d.total_retained.resolution_events, 1u);
  EXPECT_EQ(finding(d, kKept).peak_live_bytes, 4096);
  EXPECT_EQ(finding(d, kKept).retained.peak_if_freed_at_last_use_bytes, 4096);
  // Together 12 KiB were live; had a been freed after its use, 8 KiB at most.
  EXPECT_EQ(d.total_retained.peak_if_freed_at_last_use_bytes, 8192);
  // Freed inside the op that last used it: never held across an op, so never called dead.
  EXPECT_EQ(finding(d, kKept).retained.peak_dead_bytes, 0);
  EXPECT_EQ(d.total_retained.peak_dead_bytes, 0);
}

// Past 512 marks samples are thinned: the first keeps its per-allocator figures (no self-move), and
// final figures and the fit reach the last iteration, not the last kept sample.
TEST(Recorder, ThinnedRunsKeepTheFirstSampleWholeAndEndAtTheLastIteration) {
  SyntheticRun run;
  for (int i = 0; i < 1200; ++i) {
    run.allocate(kKept, 100);
    run.tick();
    run.mark();
  }
  const Recording recording = run.finish();
  ASSERT_GT(recording.mark_stride, 1u);
  EXPECT_EQ(recording.marks.front().allocator_live_bytes.size(), 1u);
  EXPECT_EQ(recording.marks.front().allocator_live_bytes[0], 100);
  EXPECT_EQ(recording.last_mark.iteration, 1200u);
  EXPECT_EQ(recording.last_mark.live_bytes, 120000);
  const Diagnosis d = classify(recording, {});
  EXPECT_EQ(finding(d, kKept).final_live_bytes, 120000);
  EXPECT_EQ(finding(d, kKept).growth.last_iteration, 1200u);
  EXPECT_NEAR(finding(d, kKept).growth.slope_bytes_per_iteration, 100.0, 1e-9);
}

}  // namespace
}  // namespace tleak::diagnosis
