// How diff matches sites across two reports: by every frame's function, module, file name and
// line; by function and module alone only for a site that is the only one of its kind left on each
// side (its code moved); and sites merged by equal frames take the worst verdict.
#include <gtest/gtest.h>

#include "tleak/diagnosis/diff.h"
#include "tleak/diagnosis/report_summary.h"

namespace tleak::diagnosis {
namespace {

SiteSummary site(const std::string& function, int line, const std::string& verdict, std::int64_t peak) {
  const std::vector<Frame> frames = {Frame{1, function, "prog", 10, "/build/a/src/x.cc", line, "native"}};
  SiteSummary s;
  s.key = site_key(frames);
  s.loose_key = site_loose_key(frames);
  s.label = function;
  s.label += ':';
  s.label += std::to_string(line);
  s.verdict = verdict;
  s.peak_live_bytes = peak;
  return s;
}

ReportSummary report(std::vector<SiteSummary> sites) {
  ReportSummary r;
  r.scenario.append("scenario");
  r.sites = std::move(sites);
  return r;
}

TEST(DiffMatching, SitesSharingAFunctionStayApartByLine) {
  const Diff d = diff_reports(report({site("f", 10, "bounded", 100), site("f", 20, "bounded", 100)}),
                              report({site("f", 10, "bounded", 100), site("f", 20, "retained", 100)}), false);
  ASSERT_EQ(d.sites.size(), 2u);
  EXPECT_EQ(d.changed_sites, 1u);
  ASSERT_EQ(d.regressions().size(), 1u);
  EXPECT_EQ(d.regressions()[0].kind, RegressionKind::kRetained);
  EXPECT_TRUE(fails(d, fail_policy({"retained"}, "")));
}

TEST(DiffMatching, ASiteWhoseLineMovedStillMatchesWhenAlone) {
  const Diff d = diff_reports(report({site("f", 10, "bounded", 100)}), report({site("f", 14, "growth", 100)}), false);
  ASSERT_EQ(d.sites.size(), 1u);
  EXPECT_EQ(d.sites[0].status, "changed");
  EXPECT_EQ(d.sites[0].verdict_a, "bounded");
  EXPECT_EQ(d.sites[0].verdict_b, "growth");
  // Two candidates on a side: no guessing, they are new and gone.
  const Diff ambiguous = diff_reports(report({site("f", 10, "bounded", 1), site("f", 11, "bounded", 1)}),
                                      report({site("f", 12, "bounded", 1), site("f", 13, "bounded", 1)}), false);
  EXPECT_EQ(ambiguous.new_sites, 2u);
  EXPECT_EQ(ambiguous.gone_sites, 2u);
}

TEST(DiffMatching, MergedSitesTakeTheWorstVerdict) {
  const Diff d = diff_reports(report({site("f", 10, "retained", 100), site("f", 10, "bounded", 50)}),
                              report({site("f", 10, "retained", 100), site("f", 10, "bounded", 50)}), false);
  ASSERT_EQ(d.sites.size(), 1u);
  EXPECT_EQ(d.sites[0].verdict_a, "retained");
  EXPECT_EQ(d.sites[0].verdict_b, "retained");
  EXPECT_EQ(d.sites[0].peak_live_a, 150);
}

// Two snapshots of a program sampled every 50 ms: its growth is per 50 ms, and the diff says so,
// never "per iteration"; runs on different clocks are compared with a note that says which is which.
TEST(DiffMatching, GrowthOfTimeSampledRunsIsPerTheirPeriod) {
  SiteSummary slow = site("f", 10, "growth", 100), fast = site("f", 10, "growth", 100);
  slow.slope_bytes_per_iteration = 1024;
  fast.slope_bytes_per_iteration = 4096;
  ReportSummary a = report({slow}), b = report({fast});
  a.words = b.words = sample_words(0.05);
  a.slope_bytes_per_iteration = 1024;
  b.slope_bytes_per_iteration = 4096;
  const Diff d = diff_reports(a, b, false);
  ASSERT_EQ(d.regressions().size(), 1u);
  EXPECT_EQ(d.regressions()[0].what, "f:10: grows +3.0 KiB more per 50 ms");
  const std::string text = render_text(d, 10);
  EXPECT_NE(text.find("growth: 1.0 KiB/50 ms -> 4.0 KiB/50 ms (+3.0 KiB)"), std::string::npos) << text;
  EXPECT_EQ(text.find("iter"), std::string::npos) << text;
  EXPECT_EQ(text.find("note:"), std::string::npos) << text;

  a.words = iteration_words();
  const std::string mixed = render_text(diff_reports(a, b, false), 10);
  EXPECT_NE(mixed.find("growth: 1.0 KiB/iter -> 4.0 KiB/50 ms"), std::string::npos) << mixed;
  EXPECT_NE(mixed.find("note: the runs' growth is per different steps (A per iteration, B per 50 ms)"), std::string::npos)
      << mixed;
}

}  // namespace
}  // namespace tleak::diagnosis
