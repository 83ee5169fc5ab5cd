// tleak diff and tleak check as a user runs them.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <iterator>
#include <thread>
#include <map>
#include <set>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../support/tleak_cli.h"
#include "tleak/diagnosis/report_json.h"
#include "tleak/scenarios/scenario.h"

namespace tleak {
namespace {

using diagnosis::Report;
using diagnosis::SiteReport;
using nlohmann::json;
using testing::ProcessResult;
using testing::run_process;
using testing::tleak;
using testing::expect_refused;


class Files {
 public:
  Files() : dir_(std::filesystem::temp_directory_path() / ("tleak-diff-" + std::to_string(getpid()))) {
    std::filesystem::create_directories(dir_);
  }
  ~Files() { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) const {
    const auto path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  std::string write(const std::string& name, const Report& r) const { return write(name, diagnosis::to_json(r).dump()); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

 private:
  std::filesystem::path dir_;
};

SiteReport site(const std::string& function, const std::string& verdict, std::uintptr_t offset) {
  SiteReport s;
  s.verdict = verdict;
  s.label = function;
  s.frames = {Frame{0x400000 + offset, function, "app", offset, "app.cc", 10},
              Frame{0x500000 + offset, "main", "app", offset + 100, "main.cc", 3}};
  s.peak_live_bytes = 1000;
  s.final_live_bytes = 1000;
  return s;
}

Report report(const std::string& scenario, std::vector<SiteReport> sites) {
  Report r;
  r.run.scenario = scenario;
  r.run.variant = "leaky";
  r.run.mode = "eager";
  r.run.iterations = 10;
  r.sites = std::move(sites);
  for (const SiteReport& s : r.sites) {
    r.totals.peak_live_bytes += s.peak_live_bytes;
    r.totals.leaked_bytes += s.leaked_bytes;
  }
  return r;
}

TEST(Diff, MatchesSitesByFramesAcrossDifferentAddresses) {
  Files files;
  // Same functions and modules, every address and offset different (another build, ASLR).
  const auto a = files.write("a.json", report("s", {site("load", "bounded", 0x10), site("step", "bounded", 0x20)}));
  const auto b = files.write("b.json", report("s", {site("step", "bounded", 0x999), site("load", "bounded", 0x777)}));
  const ProcessResult r = tleak({"diff", a, b, "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json d = json::parse(r.out);
  EXPECT_EQ(d["schema"], "tleak.diff/1");
  EXPECT_EQ(d["counts"]["new"], 0);
  EXPECT_EQ(d["counts"]["gone"], 0);
  EXPECT_EQ(d["counts"]["changed"], 0);
  for (const json& s : d["sites"]) EXPECT_EQ(s["status"], "unchanged");
}

TEST(Diff, ListsNewAndGoneSites) {
  Files files;
  const auto a = files.write("a.json", report("s", {site("old_path", "bounded", 1), site("kept", "bounded", 2)}));
  const auto b = files.write("b.json", report("s", {site("kept", "bounded", 2), site("new_path", "bounded", 3)}));
  const json d = json::parse(tleak({"diff", a, b, "--format", "json"}).out);
  EXPECT_EQ(d["counts"]["new"], 1);
  EXPECT_EQ(d["counts"]["gone"], 1);
  std::map<std::string, std::string> status;
  for (const json& s : d["sites"]) status[s["label"]] = s["status"];
  EXPECT_EQ(status["new_path"], "new");
  EXPECT_EQ(status["old_path"], "gone");
  EXPECT_EQ(status["kept"], "unchanged");
  const ProcessResult text = tleak({"diff", a, b});
  EXPECT_NE(text.out.find("[new] new_path"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("[gone] old_path"), std::string::npos) << text.out;
}

TEST(Diff, EachRegressionKindFailsOnlyWhenAskedAndAboveTheThreshold) {
  Files files;
  SiteReport leak_b = site("f", "leak", 1);
  leak_b.leaked_bytes = 5000;
  SiteReport growth_b = site("g", "growth", 2);
  growth_b.growth.slope_bytes_per_iteration = 40000;
  SiteReport retained_b = site("h", "retained", 3);
  retained_b.retained.peak_dead_bytes = 70000;
  const auto a = files.write("a.json", report("s", {site("f", "bounded", 1), site("g", "bounded", 2), site("h", "bounded", 3)}));
  const auto b = files.write("b.json", report("s", {leak_b, growth_b, retained_b}));

  EXPECT_EQ(tleak({"diff", a, b}).exit_code, 0);  // a report, not a gate, unless asked
  EXPECT_EQ(tleak({"diff", a, b, "--fail-on", "leak"}).exit_code, 1);
  EXPECT_EQ(tleak({"diff", a, b, "--fail-on", "growth"}).exit_code, 1);
  EXPECT_EQ(tleak({"diff", a, b, "--fail-on", "retained"}).exit_code, 1);
  EXPECT_EQ(tleak({"diff", a, b, "--fail-on", "any"}).exit_code, 1);
  // Thresholds: 5,000 leaked bytes pass a 1 MiB allowance, fail a 4 KiB one.
  EXPECT_EQ(tleak({"diff", a, b, "--fail-on", "leak", "--max-increase", "1MiB"}).exit_code, 0);
  EXPECT_EQ(tleak({"diff", a, b, "--fail-on", "leak", "--max-increase", "4KiB"}).exit_code, 1);
  EXPECT_EQ(tleak({"diff", a, b, "--fail-on", "retained", "--max-increase", "64KiB"}).exit_code, 1);
  EXPECT_EQ(tleak({"diff", a, b, "--fail-on", "retained", "--max-increase", "100KiB"}).exit_code, 0);
  // The reverse direction is all improvements.
  const ProcessResult back = tleak({"diff", b, a, "--fail-on", "any"});
  EXPECT_EQ(back.exit_code, 0);
  EXPECT_NE(back.out.find("improvement: f: leak -> bounded"), std::string::npos) << back.out;
  EXPECT_NE(back.out.find("improvement: g: growth -> bounded"), std::string::npos) << back.out;

  const json d = json::parse(tleak({"diff", a, b, "--format", "json"}).out);
  EXPECT_EQ(d["counts"]["regressions"], 3);
  std::set<std::string> kinds;
  for (const json& s : d["sites"]) {
    for (const json& r : s["regressions"]) kinds.insert(r["kind"]);
  }
  EXPECT_EQ(kinds, (std::set<std::string>{"leak", "growth", "retained"}));
}

TEST(Diff, TotalPeakIncreaseBeyondTheAllowanceFails) {
  Files files;
  SiteReport bigger = site("f", "bounded", 1);
  bigger.peak_live_bytes = 3 << 20;
  const auto a = files.write("a.json", report("s", {site("f", "bounded", 1)}));
  const auto b = files.write("b.json", report("s", {bigger}));
  EXPECT_EQ(tleak({"diff", a, b, "--max-increase", "1MiB"}).exit_code, 1);
  EXPECT_EQ(tleak({"diff", a, b, "--max-increase", "4MiB"}).exit_code, 0);
}

TEST(Diff, BadInputsAreOneLineAndExitTwo) {
  Files files;
  const auto good = files.write("good.json", report("s", {site("f", "bounded", 1)}));
  const auto other = files.write("other.json", report("t", {site("f", "bounded", 1)}));
  json newer = diagnosis::to_json(report("s", {}));
  newer["schema"] = "tleak.report/9";
  const std::string full = diagnosis::to_json(report("s", {site("f", "bounded", 1)})).dump();
  json odd_frame = diagnosis::to_json(report("s", {site("f", "bounded", 1)}));
  odd_frame["sites"][0]["frames"][0]["kind"] = "jit";
  const struct {
    std::vector<std::string> args;
    std::string message;
  } cases[] = {
      {{"diff", files.path("missing.json"), good}, "missing.json: cannot open (missing or unreadable)"},
      {{"diff", files.write("text.json", "hello"), good}, "text.json: not JSON"},
      {{"diff", files.write("truncated.json", full.substr(0, full.size() / 2)), good}, "truncated.json: not JSON"},
      {{"diff", files.write("foreign.json", R"({"name": "x"})"), good}, "foreign.json: not a tleak report: no \"schema\" field"},
      {{"diff", files.write("newer.json", newer.dump()), good}, "is newer than this tleak reads"},
      {{"diff", files.write("odd_frame.json", odd_frame.dump()), good},
       "odd_frame.json: malformed report: a frame of unknown kind \"jit\" in sites[0] (native, inlined or python)"},
      {{"diff", good, other}, "different scenarios or programs ('s' and 't'); pass --force"},
      {{"diff", good, good, "--max-increase", "lots"}, "--max-increase: 'lots' is not a size"},
      {{"diff", good}, "b"},
  };
  for (const auto& c : cases) expect_refused(tleak(c.args), c.message);
  const ProcessResult forced = tleak({"diff", good, other, "--force"});
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_NE(forced.out.find("different scenarios or programs, compared because of --force"), std::string::npos);
}

// Two runs of one command are of one program whatever each report names it: an older tleak named a
// Python program by its interpreter (python3.11), a newer one by its script. Another command's
// report still needs --force.
TEST(Diff, ReportsOfOneCommandAreOfOneProgramWhateverTheirNames) {
  Files files;
  const auto program_report = [](const std::string& name, std::vector<std::string> command) {
    Report r = report(name, {site("f", "bounded", 1)});
    r.run.program = diagnosis::ProgramInfo{};
    r.run.program->command = std::move(command);
    return r;
  };
  const auto older = files.write("older.json", program_report("python3.11", {"/usr/bin/python3", "train.py"}));
  const auto newer = files.write("newer.json", program_report("train.py", {"/usr/bin/python3", "train.py"}));
  const auto other = files.write("other.json", program_report("serve.py", {"/usr/bin/python3", "serve.py"}));
  const ProcessResult same = tleak({"diff", older, newer});
  EXPECT_EQ(same.exit_code, 0) << same.err;
  EXPECT_EQ(same.out.find("compared because of --force"), std::string::npos) << same.out;
  expect_refused(tleak({"diff", newer, other}), "different scenarios or programs ('train.py' and 'serve.py'); pass --force");
  // One command whose runs recorded two of its programs (--record): two programs.
  Report first = program_report("train.py", {"./run.sh"}), second = program_report("eval.py", {"./run.sh"});
  first.run.program->record = "python3";
  second.run.program->record = "python3.11";
  expect_refused(tleak({"diff", files.write("first.json", first), files.write("second.json", second)}),
                 "different scenarios or programs ('train.py' and 'eval.py'); pass --force");
  // Recorded by the same name, as one program, though named apart.
  second.run.program->record = "python3";
  const ProcessResult recorded = tleak({"diff", files.path("first.json"), files.write("second.json", second)});
  EXPECT_EQ(recorded.exit_code, 0) << recorded.err;
  // A command's forked copy (--record-fork) and its own process: two programs, though one script.
  Report main_process = program_report("train.py", {"/usr/bin/python3", "train.py"});
  Report worker = main_process;
  worker.run.program->forked_copy = true;
  const auto main_file = files.write("main.json", main_process), worker_file = files.write("worker.json", worker);
  expect_refused(tleak({"diff", main_file, worker_file}),
                 "report B is of a forked copy of its command's process (--record-fork), the other of a process "
                 "started anew; pass --force");
  const ProcessResult workers = tleak({"diff", worker_file, files.write("worker2.json", worker)});
  EXPECT_EQ(workers.exit_code, 0) << workers.err;
}

TEST(Diff, RealLeakyAndFixedRunsNameTheFixedSite) {
  Files files;
  const auto leaky = files.path("leaky.json"), fixed = files.path("fixed.json");
  ASSERT_EQ(tleak({"run", "graph-ops-in-loop", "--variant", "leaky", "-o", leaky}).exit_code, 0);
  ASSERT_EQ(tleak({"run", "graph-ops-in-loop", "--variant", "fixed", "-o", fixed}).exit_code, 0);
  const ProcessResult r = tleak({"diff", leaky, fixed});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("improvement: runtime::constant in scenarios::graph_ops_in_loop"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("growth -> bounded"), std::string::npos) << r.out;
  // The other way round it is a growth regression, and --fail-on growth gates it.
  const ProcessResult worse = tleak({"diff", fixed, leaky, "--fail-on", "growth"});
  EXPECT_EQ(worse.exit_code, 1);
  EXPECT_NE(worse.out.find("regression (growth): runtime::constant in scenarios::graph_ops_in_loop"), std::string::npos) << worse.out;
}

TEST(Check, DefaultChecksPassAndPrintTheClosingLine) {
  Files files;
  const auto junit = files.path("results.xml");
  const ProcessResult r = tleak({"check", "--junit", junit});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("PASS  graph-ops-in-loop leaky (graph): growth"), std::string::npos) << r.out;
  // One check per scenario and variant of the catalogue.
  std::size_t variants = 0;
  for (const scenarios::Scenario& s : scenarios::all_scenarios()) variants += s.variants.size();
  const std::string checks = std::to_string(variants);
  EXPECT_NE(r.out.find(checks + " passed, 0 failed\n"), std::string::npos) << r.out;
  std::ifstream in(junit);
  const std::string xml((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(xml.find("<testsuite name=\"tleak check\" tests=\"" + checks + "\" failures=\"0\""), std::string::npos) << xml;
}

TEST(Check, AChangedExpectationFailsAndNamesTheScenario) {
  Files files;
  const auto checks = files.write("checks.json", R"({"schema": "tleak.checks/1", "checks": [
    {"scenario": "clean-loop", "variant": "leaky", "expect": {"verdict": "bounded", "max_leaked_bytes": 0}},
    {"scenario": "graph-ops-in-loop", "variant": "leaky", "expect": {"verdict": "bounded"}},
    {"scenario": "custom-op-scratch", "variant": "leaky", "expect": {"max_leaked_bytes": 1000}}]})");
  const auto junit = files.path("out.xml");
  const ProcessResult r = tleak({"check", "--checks", checks, "--junit", junit});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("PASS  clean-loop leaky (eager)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("FAIL  graph-ops-in-loop leaky (graph): expected verdict bounded, got growth"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("FAIL  custom-op-scratch leaky (eager): leaked 16000 bytes, limit 1000"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 passed, 2 failed\n"), std::string::npos) << r.out;
  std::ifstream in(junit);
  const std::string xml((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(xml.find("failures=\"2\""), std::string::npos);
  EXPECT_NE(xml.find("name=\"graph-ops-in-loop leaky (graph)\""), std::string::npos);
}

TEST(Check, BadChecksFilesAreRefused) {
  Files files;
  const struct {
    std::string text;
    std::string message;
  } cases[] = {
      // The JSON library's message, without its own tag ("[json.exception.parse_error.101]").
      {"nope", "bad.json: not JSON (parse error at line 1, column 2"},
      {R"({"checks": []})", "not a checks file"},
      {R"({"schema": "tleak.checks/1", "checks": [{"scenario": "no-such"}]})", "check 1: unknown scenario 'no-such'"},
      {R"({"schema": "tleak.checks/1", "checks": [{"scenario": "clean-loop", "mode": "jit"}]})", "does not run in mode 'jit'"},
      {R"({"schema": "tleak.checks/1", "checks": [{"scenario": "clean-loop", "variant": "allow-growth"}]})",
       "scenario 'clean-loop' has no variant 'allow-growth' (it has: leaky, fixed)"},
      {R"({"schema": "tleak.checks/1", "checks": [{"scenario": "clean-loop", "expect": {"verdit": "leak"}}]})", "unknown field 'verdit'"},
      {R"({"schema": "tleak.checks/1", "checks": [{"scenario": "clean-loop", "expect": {"verdict": "awful"}}]})", "unknown verdict 'awful'"},
      // Found by the fuzzer: a number too large for a double is not a parse error to the JSON
      // library, and once ended the process.
      {R"({"schema": "tleak.checks/1", "checks": [{"scenario": "clean-loop", "expect": {"max_leaked_bytes": 5e246976}}]})",
       "not JSON"},
      {R"({"schema": [{"expect": {"verdict": "bounded"}}]})", "not a checks file"},
      // Numbers are range-checked before conversion (a fraction was truncated, 1e300 became a
      // negative limit, a negative limit failed every run).
      {R"({"schema": "tleak.checks/1", "checks": [{"scenario": "clean-loop", "iterations": 2.5}]})",
       "iterations must be a whole number from 1 to 1000000, got 2.5"},
      {R"({"schema": "tleak.checks/1", "checks": [{"scenario": "clean-loop", "iterations": 1e30}]})",
       "iterations must be a whole number"},
      {R"({"schema": "tleak.checks/1", "checks": [{"scenario": "clean-loop", "expect": {"max_leaked_bytes": 1e300}}]})",
       "max_leaked_bytes must be a whole number from 0 to"},
      {R"({"schema": "tleak.checks/1", "checks": [{"scenario": "clean-loop", "expect": {"max_retained_peak_bytes": -5}}]})",
       "max_retained_peak_bytes must be a whole number from 0 to"},
      {R"({"schema": "tleak.checks/1", "checks": [{"scenario": "clean-loop", "expect": {"max_growth_bytes_per_iteration": -1}}]})",
       "max_growth_bytes_per_iteration must be a number of bytes from 0 to 10^15, got -1"},
      {R"({"schema": "tleak.checks/1", "checks": [{"scenario": "clean-loop", "expect": {"max_growth_bytes_per_iteration": "1k"}}]})",
       "max_growth_bytes_per_iteration must be a number of bytes"},
  };
  for (const auto& c : cases) {
    const ProcessResult r = tleak({"check", "--checks", files.write("bad.json", c.text)});
    EXPECT_EQ(r.exit_code, 2) << c.text;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
  }
  EXPECT_EQ(tleak({"check", "--update-baseline"}).exit_code, 2);
}

TEST(Check, ABaselineWithANumberTooLargeFailsItsCheckWithItsPath) {
  // Found by the fuzzer: the JSON library reports such a number as out of range, not as a parse
  // error, and it once ended tleak.
  Files files;
  const auto checks = files.write("checks.json", R"({"schema": "tleak.checks/1", "checks": [{"scenario": "clean-loop"}]})");
  std::filesystem::create_directories(files.path("baselines"));
  files.write("baselines/clean-loop.leaky.eager.json", R"({"schema": "tleak.report/1", "x": 1e999})");
  const ProcessResult r = tleak({"check", "--checks", checks, "--baseline", files.path("baselines")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("no usable baseline: " + files.path("baselines/clean-loop.leaky.eager.json") + ": not JSON"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0 passed, 1 failed"), std::string::npos) << r.out;
}

TEST(Check, BaselinesAreWrittenThenCompared) {
  Files files;
  const auto checks = files.write("checks.json", R"({"schema": "tleak.checks/1", "checks": [
    {"scenario": "append-loop", "variant": "fixed"}, {"scenario": "clean-loop"}]})");
  const auto dir = files.path("baselines");
  const ProcessResult update = tleak({"check", "--checks", checks, "--baseline", dir, "--update-baseline"});
  EXPECT_EQ(update.exit_code, 0) << update.out << update.err;
  EXPECT_TRUE(std::filesystem::exists(dir + "/append-loop.fixed.eager.json"));
  const ProcessResult same = tleak({"check", "--checks", checks, "--baseline", dir});
  EXPECT_EQ(same.exit_code, 0) << same.out;
  EXPECT_NE(same.out.find("2 passed, 0 failed"), std::string::npos);
  // A baseline from the fixed variant, checked against the leaky run: a growth regression.
  std::filesystem::copy_file(dir + "/append-loop.fixed.eager.json", dir + "/append-loop.leaky.eager.json");
  const auto leaky_checks = files.write("leaky.json", R"({"schema": "tleak.checks/1", "checks": [
    {"scenario": "append-loop", "variant": "leaky"}]})");
  const ProcessResult worse = tleak({"check", "--checks", leaky_checks, "--baseline", dir});
  EXPECT_EQ(worse.exit_code, 1);
  EXPECT_NE(worse.out.find("FAIL  append-loop leaky (eager): "), std::string::npos) << worse.out;
  EXPECT_NE(worse.out.find("bounded -> growth"), std::string::npos) << worse.out;
}

}  // namespace
}  // namespace tleak

namespace tleak {
namespace {

// A site that went bounded -> retained fails a retained gate even when its dead bytes did not grow.
TEST(DiffGate, AWorseVerdictFailsItsKindsGate) {
  const std::string dir = std::filesystem::temp_directory_path() / ("tleak-gate-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string fixed = dir + "/fixed.json", leaky = dir + "/leaky.json";
  ASSERT_EQ(testing::run_process(TLEAK_BINARY, {"run", "traced-capture", "--variant", "fixed", "-o", fixed}).exit_code, 0);
  ASSERT_EQ(testing::run_process(TLEAK_BINARY, {"run", "traced-capture", "-o", leaky}).exit_code, 0);
  const auto r = testing::run_process(TLEAK_BINARY, {"diff", fixed, leaky, "--fail-on", "retained"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("bounded -> retained"), std::string::npos) << r.out;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tleak

namespace tleak {
namespace {

// diff reads a FIFO (as `<(...)` gives it); error lines never carry control characters raw.
TEST(DiffInput, ReadsAFifoAndPrintsNamesSafely) {
  const std::string dir = std::filesystem::temp_directory_path() / ("tleak-fifo-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string report = dir + "/a.json", fifo = dir + "/fifo";
  ASSERT_EQ(testing::run_process(TLEAK_BINARY, {"run", "append-loop", "-o", report}).exit_code, 0);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] {
    std::ifstream in(report, std::ios::binary);
    std::ofstream out(fifo, std::ios::binary);
    out << in.rdbuf();
  });
  const auto r = testing::run_process(TLEAK_BINARY, {"diff", report, fifo});
  writer.join();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("0 regression"), std::string::npos) << r.out;

  const auto bad = testing::run_process(TLEAK_BINARY, {"diff", report, dir + "/x\x1b[31my\nz"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err.find('\x1b'), std::string::npos) << bad.err;
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tleak

namespace tleak {
namespace {

// A key given twice: diff and check refuse it alike (JSON readers disagree on which one counts).
TEST(DuplicateKeys, DiffAndCheckRefuseTheSameReport) {
  const std::string dir = std::filesystem::temp_directory_path() / ("tleak-dup-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir + "/baselines");
  const std::string good = dir + "/good.json", bad = dir + "/baselines/append-loop.leaky.eager.json";
  ASSERT_EQ(testing::run_process(TLEAK_BINARY, {"run", "append-loop", "-o", good}).exit_code, 0);
  std::ifstream in(good);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  const auto at = text.find("\"verdict\": \"growth\"", text.find("\"sites\""));
  ASSERT_NE(at, std::string::npos);
  text.insert(at, "\"verdict\": \"bounded\", ");
  std::ofstream(bad) << text;
  const auto d = testing::run_process(TLEAK_BINARY, {"diff", good, bad});
  EXPECT_EQ(d.exit_code, 2);
  EXPECT_NE(d.err.find("\"verdict\" given twice"), std::string::npos) << d.err;
  const std::string checks = dir + "/checks.json";
  std::ofstream(checks) << R"({"schema": "tleak.checks/1", "checks": [{"scenario": "append-loop"}]})";
  const auto c = testing::run_process(TLEAK_BINARY, {"check", "--checks", checks, "--baseline", dir + "/baselines"});
  EXPECT_EQ(c.exit_code, 1);
  EXPECT_NE(c.out.find("given twice"), std::string::npos) << c.out;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tleak
