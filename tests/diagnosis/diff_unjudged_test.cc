// A diff whose run B had no exit scan (its leaks not looked for) claims no leak fixed, shows B's
// leaked bytes as not judged, and fails a gate on leaks; a gate on growth alone is not its to fail.
#include <gtest/gtest.h>

#include "tleak/diagnosis/diff.h"
#include "tleak/diagnosis/report_summary.h"

namespace tleak::diagnosis {
namespace {

SiteSummary leaky_site(const std::string& verdict, std::int64_t leaked) {
  const std::vector<Frame> frames{Frame{1, "lose", "prog", 10, "/src/prog.c", 14, FrameKind::kNative}};
  SiteSummary s;
  s.key = site_key(frames);
  s.line_key = site_line_key(frames);
  s.loose_key = site_loose_key(frames);
  s.physical_key = site_physical_key(frames);
  s.label = "lose (prog.c:14)";
  s.verdict = verdict;
  s.peak_live_bytes = 1000;
  s.leaked_bytes = leaked;
  return s;
}

ReportSummary program_report(const std::string& verdict, std::int64_t leaked, bool leaks_judged) {
  ReportSummary r;
  r.scenario = "prog";
  r.command = {"./prog"};
  r.retained_measured = false;
  r.leaked_bytes = leaked;
  r.leaks_judged = leaks_judged;
  r.sites = {leaky_site(verdict, leaked)};
  return r;
}

TEST(DiffUnjudged, ALeakNotLookedForInBIsNoLeakFixed) {
  const Diff d = diff_reports(program_report("leak", 1000, true), program_report("bounded", 0, false), false);
  ASSERT_EQ(d.sites.size(), 1u);
  EXPECT_EQ(d.sites[0].verdict_a, "leak");
  EXPECT_EQ(d.sites[0].verdict_b, "bounded");
  EXPECT_TRUE(d.sites[0].improvements.empty());
  EXPECT_TRUE(d.regressions().empty());
  EXPECT_FALSE(d.totals.leaks_judged_b);
  EXPECT_TRUE(fails(d, fail_policy({"leak"}, "")));
  EXPECT_TRUE(fails(d, fail_policy({"any"}, "")));
  EXPECT_FALSE(fails(d, fail_policy({"growth"}, "")));
  const std::string text = render_text(d);
  EXPECT_NE(text.find("  leaked: 1000 B -> not judged (no exit scan: the report's notes say why)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("leaked 1000 B -> not judged\n"), std::string::npos) << text;
  const nlohmann::json json = to_json(d);
  EXPECT_EQ(json["totals"]["leaks_judged"], (nlohmann::json{{"a", true}, {"b", false}}));
  // B's leaks are unknown, not 0 B; and no run of a program measured dead-held bytes.
  EXPECT_EQ(json["totals"]["leaked_bytes"], (nlohmann::json{{"a", 1000}, {"b", nullptr}}));
  EXPECT_EQ(json["sites"][0]["leaked_bytes"], (nlohmann::json{{"a", 1000}, {"b", nullptr}}));
  EXPECT_EQ(json["totals"]["retained_peak_bytes"], (nlohmann::json{{"a", nullptr}, {"b", nullptr}}));
  EXPECT_EQ(json["sites"][0]["retained_peak_bytes"], (nlohmann::json{{"a", nullptr}, {"b", nullptr}}));

  // Judged on both sides, the same change is a leak fixed, and the gate passes.
  const Diff judged = diff_reports(program_report("leak", 1000, true), program_report("bounded", 0, true), false);
  ASSERT_EQ(judged.sites.size(), 1u);
  EXPECT_EQ(judged.sites[0].improvements, (std::vector<std::string>{"lose (prog.c:14): leak -> bounded"}));
  EXPECT_FALSE(fails(judged, fail_policy({"leak"}, "")));
  EXPECT_NE(render_text(judged).find("  leaked: 1000 B -> 0 B"), std::string::npos) << render_text(judged);
  EXPECT_EQ(to_json(judged)["sites"][0]["leaked_bytes"], (nlohmann::json{{"a", 1000}, {"b", 0}}));
}

}  // namespace
}  // namespace tleak::diagnosis
