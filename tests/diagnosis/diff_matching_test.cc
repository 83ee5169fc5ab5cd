// How diff matches sites across two reports: by every frame's function, module, file name, line
// and columns (a Python frame's); without columns for a report that gave none; by function and module alone only for a site that is the only one of its kind left on each
// side (its code moved), then likewise by the frames not inlined (a report without inlined frames);
// and sites merged by equal frames take the worst verdict.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "tleak/diagnosis/diff.h"
#include "tleak/diagnosis/report_summary.h"

namespace tleak::diagnosis {
namespace {

SiteSummary site_of(const std::vector<Frame>& frames, const std::string& label, const std::string& verdict,
                    std::int64_t peak) {
  SiteSummary s;
  s.key = site_key(frames);
  s.line_key = site_line_key(frames);
  s.has_columns = std::any_of(frames.begin(), frames.end(), [](const Frame& f) { return f.column > 0; });
  s.loose_key = site_loose_key(frames);
  s.physical_key = site_physical_key(frames);
  s.label = label;
  s.verdict = verdict;
  s.peak_live_bytes = peak;
  return s;
}

SiteSummary site(const std::string& function, int line, const std::string& verdict, std::int64_t peak) {
  return site_of({Frame{1, function, "prog", 10, "/build/a/src/x.cc", line, FrameKind::kNative}},
                 function + ":" + std::to_string(line), verdict, peak);
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
  // Two A sites with equal frames are one site of the diff: alone, it matches (the page's pairing
  // does the same: tests/web/site_matching_test.mjs).
  const Diff twins = diff_reports(report({site("f", 10, "bounded", 1), site("f", 10, "bounded", 2)}),
                                  report({site("f", 12, "bounded", 3)}), false);
  ASSERT_EQ(twins.sites.size(), 1u);
  EXPECT_EQ(twins.sites[0].peak_live_a, 3);
  EXPECT_EQ(twins.sites[0].status, "unchanged");
}

// A report of a tleak that named no inlined frames against one that does, of the same program: the
// physical frame's line was the inlined code's own (libdw's innermost line at the address), and is
// now the line where the function called the inlined code, after the inlined frames. Each site
// matches its own, as long as it is alone on each side by the frames not inlined; two in one
// function, told apart only by what was inlined, are not guessed at.
TEST(DiffMatching, AReportWithoutInlinedFramesMatchesByTheFramesNotInlined) {
  const auto native = [](const std::string& function, const std::string& file, int line) {
    return Frame{1, function, "prog", 10, file, line, FrameKind::kNative};
  };
  const auto inlined = [](const std::string& function, const std::string& file, int line) {
    return Frame{1, function, "prog", 10, file, line, FrameKind::kInlined};
  };
  const Frame new_op{2, "operator new(unsigned long)", "libstdc++.so.6", 20, "", 0, FrameKind::kNative};
  const Frame main_frame = native("main", "main.cc", 30);
  const SiteSummary old_rows = site_of({new_op, native("grow_rows(int)", "new_allocator.h", 137), main_frame},
                                       "operator new (libstdc++.so.6)", "bounded", 100);
  const SiteSummary new_rows = site_of({new_op, inlined("allocate", "new_allocator.h", 137),
                                        inlined("emplace_back<int>", "vector.tcc", 117),
                                        native("grow_rows(int)", "rows.cc", 12), main_frame},
                                       "grow_rows (rows.cc:12)", "growth", 400);
  const SiteSummary old_load = site_of({new_op, native("load()", "basic_string.h", 225), main_frame},
                                       "operator new (libstdc++.so.6)", "bounded", 50);
  const SiteSummary new_load = site_of({new_op, inlined("_M_create", "basic_string.tcc", 140),
                                        native("load()", "load.cc", 8), main_frame},
                                       "load (load.cc:8)", "bounded", 50);
  const Diff d = diff_reports(report({old_rows, old_load}), report({new_load, new_rows}), false);
  ASSERT_EQ(d.sites.size(), 2u);
  EXPECT_EQ(d.new_sites, 0u);
  EXPECT_EQ(d.gone_sites, 0u);
  for (const SiteDelta& s : d.sites) {
    if (s.peak_live_a == 100) {
      EXPECT_EQ(s.peak_live_b, 400);
      EXPECT_EQ(s.verdict_b, "growth");
      EXPECT_EQ(s.status, "changed");
    } else {
      EXPECT_EQ(s.peak_live_a, 50);
      EXPECT_EQ(s.peak_live_b, 50);
      EXPECT_EQ(s.status, "unchanged");
    }
  }
  // Two sites in grow_rows on each side, apart only by their inlined calls: new and gone, not
  // paired at random.
  const SiteSummary new_other = site_of({new_op, inlined("_M_create", "basic_string.tcc", 140),
                                         native("grow_rows(int)", "rows.cc", 15), main_frame},
                                        "grow_rows (rows.cc:15)", "bounded", 10);
  const SiteSummary old_other = site_of({new_op, native("grow_rows(int)", "basic_string.tcc", 140), main_frame},
                                        "operator new (libstdc++.so.6)", "bounded", 10);
  const Diff two = diff_reports(report({old_rows, old_other}), report({new_rows, new_other}), false);
  EXPECT_EQ(two.new_sites, 2u);
  EXPECT_EQ(two.gone_sites, 2u);
}

// Two calls on one Python line (a layer applied to another's output), each allocating: two sites,
// told apart by their columns alone. The diff keeps them apart: the one that grows in B is its own
// regression, not summed with its bounded neighbour. A report of a tleak that gave no columns had
// them as one site (equal frames): B's two sites of that line are compared with it together.
TEST(DiffMatching, TwoCallsOnOneLineStayApartByTheirColumns) {
  const auto call = [](int column, int end_column) {
    Frame f{1, "forward", "/srv/serve.py", 0, "/srv/serve.py", 9, FrameKind::kPython};
    f.column = column;
    f.end_column = end_column;
    return site_of({f}, "serve.py:9 in forward", "bounded", 100);
  };
  SiteSummary inner_b = call(35, 46), outer_b = call(16, 50);
  inner_b.verdict = "growth";
  inner_b.peak_live_bytes = 800;
  const Diff d = diff_reports(report({call(16, 50), call(35, 46)}), report({outer_b, inner_b}), false);
  ASSERT_EQ(d.sites.size(), 2u);
  EXPECT_EQ(d.new_sites + d.gone_sites, 0u);
  ASSERT_EQ(d.regressions().size(), 2u);  // growth and peak, both of the inner call's site
  // Their labels, alike in the reports, say which call each is.
  for (const Regression& r : d.regressions()) EXPECT_EQ(r.what.rfind("serve.py:9:35 in forward: ", 0), 0u) << r.what;
  for (const SiteDelta& s : d.sites) {
    EXPECT_EQ(s.peak_live_a, 100);
    EXPECT_EQ(s.peak_live_b, s.label == "serve.py:9:35 in forward" ? 800 : 100) << s.label;
    EXPECT_TRUE(s.label == "serve.py:9:35 in forward" || s.label == "serve.py:9:16 in forward") << s.label;
  }
  // A report without columns: one site of the line, the two calls' figures summed (as tleak listed
  // them then: two sites of equal frames); B's two go to it.
  SiteSummary old_a = call(0, 0);
  old_a.peak_live_bytes = 200;
  const Diff before = diff_reports(report({old_a}), report({outer_b, inner_b}), false);
  ASSERT_EQ(before.sites.size(), 1u);
  EXPECT_EQ(before.new_sites + before.gone_sites, 0u);
  EXPECT_EQ(before.sites[0].peak_live_a, 200);
  EXPECT_EQ(before.sites[0].peak_live_b, 900);
  EXPECT_EQ(before.sites[0].verdict_b, "growth");
  EXPECT_EQ(before.sites[0].label, "serve.py:9 in forward");
  // Columns that moved (the line was edited) on both sides: two candidates each, not guessed at.
  const Diff edited = diff_reports(report({call(16, 50), call(35, 46)}), report({call(18, 52), call(37, 48)}), false);
  EXPECT_EQ(edited.new_sites, 2u);
  EXPECT_EQ(edited.gone_sites, 2u);
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

// A report that left bounded sites out (a program's import makes 686,000): a site only the other
// report lists may be one of them, so it is neither new nor gone, and its figure on the side that
// does not list it is only a bound: B's growing site, not listed in A where every left-out site
// peaked at most 13,000 bytes, is a growth regression and a peak regression of at least its peak
// less 13,000; A's bounded site not listed in B is no change at all.
TEST(DiffMatching, ASiteTheOtherReportLeftOutIsNeitherNewNorGone) {
  SiteSummary growing = site("grow", 23, "growth", 80000);
  growing.slope_bytes_per_iteration = 1600;
  ReportSummary a = report({site("kept", 5, "bounded", 500000), site("import", 9, "bounded", 14000)});
  ReportSummary b = report({site("kept", 5, "bounded", 500000), growing});
  a.unlisted_sites = 685000;
  a.unlisted_largest_peak = 13000;
  b.unlisted_sites = 685001;
  b.unlisted_largest_peak = 13500;
  const Diff d = diff_reports(a, b, false);
  EXPECT_EQ(d.new_sites, 0u);
  EXPECT_EQ(d.gone_sites, 0u);
  EXPECT_EQ(d.unlisted_sites, 2u);
  std::map<std::string, const SiteDelta*> by_label;
  for (const SiteDelta& s : d.sites) by_label[s.label] = &s;
  const SiteDelta& grown = *by_label.at("grow:23");
  EXPECT_EQ(grown.status, "unlisted_a");
  EXPECT_EQ(grown.unlisted_peak_at_most, 13000);
  ASSERT_EQ(grown.regressions.size(), 2u);
  EXPECT_EQ(grown.regressions[0].kind, RegressionKind::kGrowth);
  EXPECT_EQ(grown.regressions[0].what, "grow:23: not listed in A -> growth");
  EXPECT_EQ(grown.regressions[1].kind, RegressionKind::kPeak);
  EXPECT_EQ(grown.regressions[1].bytes, 80000 - 13000);
  const SiteDelta& import = *by_label.at("import:9");
  EXPECT_EQ(import.status, "unlisted_b");
  EXPECT_EQ(import.unlisted_peak_at_most, 13500);
  EXPECT_TRUE(import.regressions.empty());
  EXPECT_EQ(import.magnitude, 14000 - 13500);
  // Its bound only, in the JSON (no figure of its own where it is not listed) and in the text.
  const nlohmann::json j = to_json(d);
  EXPECT_EQ(j["counts"]["unlisted"], 2);
  EXPECT_EQ(j["listed"]["a"]["left_out"], 685000);
  EXPECT_EQ(j["listed"]["b"]["left_out_largest_peak_bytes"], 13500);
  for (const nlohmann::json& s : j["sites"]) {
    if (s["status"] == "unlisted_a") {
      EXPECT_TRUE(s["peak_live_bytes"]["a"].is_null());
      EXPECT_EQ(s["peak_live_bytes"]["b"], 80000);
      EXPECT_EQ(s["unlisted_peak_at_most"], 13000);
    }
    if (s["status"] == "unchanged") {
      EXPECT_TRUE(s["unlisted_peak_at_most"].is_null());
    }
  }
  const std::string text = render_text(d, 10);
  EXPECT_NE(text.find("note: A lists 2 sites and leaves out 685000 smaller bounded ones (each at most 12.7 KiB at peak)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("[not listed in A] grow:23\n      verdict - -> growth\n      peak at most 12.7 KiB -> 78.1 KiB"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("sites: 0 changed, 0 new, 0 gone, 2 listed in one run only; 2 regressions"), std::string::npos) << text;

  b.unlisted_sites = 1;
  const std::string one = render_text(diff_reports(a, b, false), 10);
  EXPECT_NE(one.find("note: B lists 2 sites and leaves out 1 smaller bounded one (at most 13.2 KiB at peak)"),
            std::string::npos)
      << one;

  // Reports that list every site: new and gone as before.
  a.unlisted_sites = b.unlisted_sites = 0;
  const Diff whole = diff_reports(a, b, false);
  EXPECT_EQ(whole.new_sites, 1u);
  EXPECT_EQ(whole.gone_sites, 1u);
  EXPECT_EQ(whole.unlisted_sites, 0u);
}

}  // namespace
}  // namespace tleak::diagnosis
