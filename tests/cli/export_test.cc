// tleak export as a user runs it: every export of every scenario's report parses as its format
// says, and its totals are the report's.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../support/scratch_dir.h"
#include "../support/tleak_cli.h"

namespace tleak {
namespace {

using nlohmann::json;
using testing::ProcessResult;
using testing::run_process;
using testing::tleak;
using testing::expect_refused;


const std::filesystem::path& export_dir() {
  static const testing::ScratchDir dir("tleak-export-");
  return dir.path();
}

// The measure's total as the report states it, computed here from the report's own fields.
std::int64_t report_total(const json& report, const std::string& measure) {
  std::int64_t total = 0;
  for (const json& site : report["sites"]) {
    if (measure == "peak") total += site["peak_live_bytes"].get<std::int64_t>();
    if (measure == "leaked") total += site["leaked_bytes"].get<std::int64_t>();
    if (measure == "retained") total += site["retained"]["peak_dead_bytes"].get<std::int64_t>();
    if (measure == "growth" && site["verdict"] == "growth") {
      total += std::llround(site["growth"]["slope_bytes_per_iteration"].get<double>());
    }
  }
  return total;
}

struct Collapsed {
  std::int64_t total = 0;
  std::size_t lines = 0;
};

// flamegraph.pl's input: "frame;frame;...;frame weight", one stack per line, weight a whole number.
Collapsed parse_collapsed(const std::string& text) {
  Collapsed c;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const auto space = line.rfind(' ');
    EXPECT_NE(space, std::string::npos) << line;
    EXPECT_GT(space, 0u) << line;
    const std::string weight = line.substr(space + 1);
    EXPECT_FALSE(weight.empty());
    EXPECT_EQ(weight.find_first_not_of("0123456789"), std::string::npos) << line;
    c.total += std::stoll(weight);
    ++c.lines;
  }
  return c;
}

class ExportEveryScenario : public ::testing::TestWithParam<std::string> {};

TEST_P(ExportEveryScenario, EachFormatParsesAndAddsUpToTheReport) {
  for (const std::string variant : {"leaky", "fixed"}) {
    const std::string report_path = (export_dir() / (GetParam() + "." + variant + ".json")).string();
    const ProcessResult run = tleak({"run", GetParam(), "--variant", variant, "-o", report_path});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    std::ifstream in(report_path);
    const json report = json::parse(in);

    std::map<std::string, std::int64_t> site_counts;
    for (const std::string measure : {"peak", "leaked", "growth", "retained"}) {
      const ProcessResult r = tleak({"export", report_path, "--format", "collapsed", "--measure", measure});
      ASSERT_EQ(r.exit_code, 0) << r.err;
      const Collapsed c = parse_collapsed(r.out);
      EXPECT_EQ(c.total, report_total(report, measure)) << GetParam() << " " << variant << " " << measure;
    }
    EXPECT_GT(parse_collapsed(tleak({"export", report_path, "--format", "collapsed"}).out).lines, 0u);

    // speedscope's file format: shared frames, one sampled profile per measure whose samples index
    // the frames and whose weights add up to its endValue.
    const ProcessResult s = tleak({"export", report_path, "--format", "speedscope"});
    ASSERT_EQ(s.exit_code, 0) << s.err;
    const json scope = json::parse(s.out);
    EXPECT_EQ(scope["$schema"], "https://www.speedscope.app/file-format-schema.json");
    const std::size_t frames = scope["shared"]["frames"].size();
    for (const json& f : scope["shared"]["frames"]) EXPECT_TRUE(f["name"].is_string());
    ASSERT_EQ(scope["profiles"].size(), 4u);
    const char* measures[] = {"peak", "leaked", "growth", "retained"};
    for (std::size_t p = 0; p < 4; ++p) {
      const json& profile = scope["profiles"][p];
      EXPECT_EQ(profile["type"], "sampled");
      EXPECT_EQ(profile["unit"], "bytes");
      ASSERT_EQ(profile["samples"].size(), profile["weights"].size());
      std::int64_t sum = 0;
      for (const json& w : profile["weights"]) sum += w.get<std::int64_t>();
      EXPECT_EQ(sum, profile["endValue"].get<std::int64_t>());
      EXPECT_EQ(sum, report_total(report, measures[p])) << measures[p];
      for (const json& stack : profile["samples"]) {
        EXPECT_FALSE(stack.empty());
        for (const json& i : stack) EXPECT_LT(i.get<std::size_t>(), frames);
      }
    }

    // Trace Event JSON: counters rise in time, and the live-bytes track ends at the report's
    // final live bytes; one instant event per sample.
    const ProcessResult t = tleak({"export", report_path, "--format", "chrome-trace"});
    ASSERT_EQ(t.exit_code, 0) << t.err;
    const json trace = json::parse(t.out);
    double last_ts = -1;
    std::int64_t last_live = -1;
    std::size_t instants = 0;
    for (const json& e : trace["traceEvents"]) {
      const std::string ph = e["ph"];
      EXPECT_TRUE(ph == "M" || ph == "C" || ph == "i") << e.dump();
      if (ph == "i") ++instants;
      if (ph != "C" || e["name"] != "live bytes") continue;
      EXPECT_GE(e["ts"].get<double>(), last_ts);
      last_ts = e["ts"];
      last_live = 0;
      for (const auto& [name, value] : e["args"].items()) last_live += value.get<std::int64_t>();
    }
    EXPECT_EQ(last_live, report["totals"]["final_live_bytes"].get<std::int64_t>()) << GetParam() << " " << variant;
    EXPECT_EQ(instants, report["timeline"]["samples"].size());
  }
}

std::vector<std::string> scenario_names() {
  const ProcessResult list = run_process(TLEAK_BINARY, {"list"});
  std::vector<std::string> names;
  std::istringstream in(list.out);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    if (!line.empty()) names.push_back(line.substr(0, line.find(' ')));
  }
  return names;
}

INSTANTIATE_TEST_SUITE_P(Catalogue, ExportEveryScenario, ::testing::ValuesIn(scenario_names()),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           std::string name = param.param;
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

TEST(Export, AProgramsReportExportsToo) {
  const std::string report_path = (export_dir() / "program.json").string();
  ASSERT_EQ(tleak({"run", "-o", report_path, "--", "/bin/ls", "/"}).exit_code, 0);
  for (const std::string format : {"collapsed", "speedscope", "chrome-trace"}) {
    const ProcessResult r = tleak({"export", report_path, "--format", format});
    EXPECT_EQ(r.exit_code, 0) << format << ": " << r.err;
    // Debian's ls is stripped: its frames are named by their place in it, each apart, never all
    // merged into one "?? [ls]".
    EXPECT_EQ(r.out.find("??"), std::string::npos) << format;
    EXPECT_NE(r.out.find("ls+0x"), std::string::npos) << format;
  }
}

// A report that left sites out (--max-sites 1): an export weighted by peak says their peaks are not
// in it, on stderr; the leaked measure, which they have none of, says nothing.
TEST(Export, AnExportByPeakSaysWhatTheReportLeftOut) {
  const std::string report_path = (export_dir() / "one-site.json").string();
  ASSERT_EQ(tleak({"run", "--max-sites", "1", "-o", report_path, "--", "/bin/ls", "/"}).exit_code, 0);
  const json report = json::parse(std::ifstream(report_path));
  const std::int64_t left_out = report["omitted_sites"]["sites"].get<std::int64_t>();
  ASSERT_GT(left_out, 0);
  const std::string note = "tleak export: the report lists 1 site and left out " + std::to_string(left_out) +
                           " smaller bounded ones (each at most ";
  for (const std::string format : {"collapsed", "speedscope"}) {
    const ProcessResult r = tleak({"export", report_path, "--format", format});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err.rfind(note, 0), 0u) << r.err;
    EXPECT_EQ(r.out.find("tleak export:"), std::string::npos);  // the export itself stays clean
  }
  const ProcessResult leaked = tleak({"export", report_path, "--format", "collapsed", "--measure", "leaked"});
  EXPECT_EQ(leaked.exit_code, 0) << leaked.err;
  EXPECT_EQ(leaked.err, "");
  // One site left out is said in the singular.
  json one_left = report;
  one_left["omitted_sites"]["sites"] = 1;
  const std::string one_left_path = (export_dir() / "one-left-out.json").string();
  std::ofstream(one_left_path) << one_left.dump();
  const ProcessResult one = tleak({"export", one_left_path, "--format", "speedscope"});
  EXPECT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(one.err.rfind("tleak export: the report lists 1 site and left out 1 smaller bounded one (at most ", 0), 0u)
      << one.err;
}

TEST(Export, WritesAtomicallyAndRefusesBadInput) {
  const std::string report_path = (export_dir() / "append.json").string();
  ASSERT_EQ(tleak({"run", "append-loop", "-o", report_path}).exit_code, 0);
  const std::string out = (export_dir() / "append.folded").string();
  const ProcessResult ok = tleak({"export", report_path, "--format", "collapsed", "--measure", "growth", "-o", out});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.out, "");
  std::ifstream in(out);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(text.find("append_result"), std::string::npos) << text;
  EXPECT_NE(text.find(" 16384\n"), std::string::npos) << text;  // append-loop grows 16 KiB per iteration

  const struct {
    std::vector<std::string> args;
    std::string message;
  } cases[] = {
      {{"export", report_path}, "--format is required"},
      {{"export", report_path, "--format", "svg"}, "--format"},
      {{"export", report_path, "--format", "speedscope", "--measure", "leaked"}, "--measure applies to --format collapsed"},
      {{"export", report_path, "--format", "collapsed", "--measure", "speed"}, "--measure"},
      {{"export", (export_dir() / "missing.json").string(), "--format", "collapsed"}, "missing.json: cannot open"},
      {{"export", report_path, "--format", "collapsed", "-o", "/nonexistent-dir/x.folded"}, "/nonexistent-dir"},
  };
  for (const auto& c : cases) expect_refused(tleak(c.args), c.message);
}

}  // namespace
}  // namespace tleak
