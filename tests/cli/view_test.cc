// tleak view and run --html: one self-contained page holding the report, written atomically (or
// with view --format text, the summary tleak run prints);
// bad input refused with one line and exit 2, leaving an existing page alone. (What the page shows
// is tested in a real browser: tests/web/page_test.mjs.)
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <unistd.h>

#include "../support/scratch_dir.h"
#include "../support/tleak_cli.h"

namespace tleak {
namespace {

using nlohmann::json;
using testing::ProcessResult;
using testing::expect_refused;
using testing::tleak;

const std::filesystem::path& view_dir() {
  static const testing::ScratchDir dir("tleak-view-test-");
  return dir.path();
}

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), {}};
}

// The data the page carries (the report in columns, web/src/page_data.cc), parsed back out of its
// script element.
json embedded_data(const std::string& page) {
  const std::string open = "<script type=\"application/json\" id=\"tleak-report\">";
  const auto begin = page.find(open);
  EXPECT_NE(begin, std::string::npos);
  const auto end = page.find("</script>", begin);
  return json::parse(page.substr(begin + open.size(), end - begin - open.size()));
}

TEST(View, ThePageCarriesTheReportAndNeedsNoNetwork) {
  const auto report_path = view_dir() / "custom.json", page_path = view_dir() / "custom.html";
  const auto html_path = view_dir() / "custom-run.html";
  const ProcessResult run = tleak({"run", "custom-op-scratch", "-o", report_path.string(), "--html", html_path.string()});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const ProcessResult view = tleak({"view", report_path.string(), "-o", page_path.string()});
  ASSERT_EQ(view.exit_code, 0) << view.err;
  EXPECT_EQ(view.out, "");
  const json report = json::parse(read(report_path));
  for (const auto& path : {page_path, html_path}) {
    const std::string page = read(path);
    const json carried = embedded_data(page);
    EXPECT_EQ(carried["report"]["summary"], report["summary"]);
    EXPECT_EQ(carried["report"]["totals"], report["totals"]);
    EXPECT_EQ(carried["site_count"], report["sites"].size());
    for (const json& site : report["sites"]) {
      EXPECT_NE(std::find(carried["strings"].begin(), carried["strings"].end(), site["label"]), carried["strings"].end())
          << site["label"];
    }
    // Nothing is fetched: no external script, style, image or font.
    EXPECT_FALSE(std::regex_search(page, std::regex(R"((src|href)\s*=\s*["']?(https?:)?//)"))) << path;
    EXPECT_NE(page.find("Content-Security-Policy"), std::string::npos);
  }
}

TEST(View, ALabelThatLooksLikeMarkupStaysData) {
  // A report whose notes hold "</script>" must not end the page's data element.
  const auto report_path = view_dir() / "markup.json", page_path = view_dir() / "markup.html";
  ASSERT_EQ(tleak({"run", "clean-loop", "-o", report_path.string()}).exit_code, 0);
  json report = json::parse(read(report_path));
  report["notes"].push_back("</script><script>alert(1)</script><!--");
  std::ofstream(report_path) << report.dump();
  ASSERT_EQ(tleak({"view", report_path.string(), "-o", page_path.string()}).exit_code, 0);
  const std::string page = read(page_path);
  EXPECT_EQ(embedded_data(page)["report"]["notes"].back(), "</script><script>alert(1)</script><!--");
  EXPECT_EQ(page.find("<script>alert"), std::string::npos);
}

// A report written earlier reads as the summary `tleak run --format text` printed when it was made.
TEST(View, ASavedReportsTextIsTheSummaryItsRunPrinted) {
  const auto report_path = view_dir() / "append.json", text_path = view_dir() / "append.txt";
  const ProcessResult run = tleak({"run", "append-loop", "--format", "text", "-o", report_path.string()});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_NE(run.out.find("growth"), std::string::npos) << run.out;
  const ProcessResult view = tleak({"view", report_path.string(), "--format", "text"});
  ASSERT_EQ(view.exit_code, 0) << view.err;
  EXPECT_EQ(view.out, run.out);
  ASSERT_EQ(tleak({"view", report_path.string(), "--format", "text", "-o", text_path.string()}).exit_code, 0);
  EXPECT_EQ(read(text_path), run.out);
}

TEST(View, BadInputIsRefusedAndAnExistingPageKept) {
  const auto report_path = view_dir() / "clean.json", page_path = view_dir() / "kept.html";
  ASSERT_EQ(tleak({"run", "clean-loop", "-o", report_path.string()}).exit_code, 0);
  std::ofstream(page_path) << "an earlier page";
  std::ofstream(view_dir() / "broken.json") << "{\"schema\": \"tleak.report/1\"";
  const struct {
    std::vector<std::string> args;
    std::string message;
  } cases[] = {
      {{"view"}, "report is required"},
      {{"view", (view_dir() / "missing.json").string(), "-o", page_path.string()}, "missing.json: cannot open"},
      {{"view", (view_dir() / "broken.json").string(), "-o", page_path.string()}, "broken.json"},
      {{"view", report_path.string(), "-o", "/nonexistent-dir/x.html"}, "/nonexistent-dir"},
      {{"view", report_path.string(), "--format", "pdf", "-o", page_path.string()}, "--format: pdf not in {html,text}"},
      {{"run", "clean-loop", "--html", "/nonexistent-dir/x.html"}, "/nonexistent-dir"},
      {{"diff", report_path.string(), report_path.string(), "--html", "/nonexistent-dir/x.html"}, "/nonexistent-dir"},
      {{"diff", report_path.string(), (view_dir() / "broken.json").string(), "--html", page_path.string()}, "broken.json"},
  };
  for (const auto& c : cases) expect_refused(tleak(c.args), c.message);
  EXPECT_EQ(read(page_path), "an earlier page");
}

}  // namespace
}  // namespace tleak
