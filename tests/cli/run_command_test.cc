// tleak run as a user runs it: a separate process, asserting on its exit code, stdout and stderr.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <sstream>
#include <thread>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../support/scratch_dir.h"
#include "../support/tleak_cli.h"

namespace tleak {
namespace {

using nlohmann::json;
using testing::ProcessResult;
using testing::run_process;
using testing::tleak;
using testing::expect_refused;


json run_json(const std::vector<std::string>& args) {
  std::vector<std::string> full = {"run"};
  full.insert(full.end(), args.begin(), args.end());
  const ProcessResult r = tleak(full);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");  // stderr is not a terminal here: no progress line
  return json::parse(r.out);
}

const json& top_site(const json& report) { return report.at("sites").at(0); }

TEST(RunCommand, ListNamesTheWorkloads) {
  const ProcessResult r = tleak({"list"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* id : {"clean-loop", "append-loop", "xla-rebind-loop", "graph-ops-in-loop", "device-hides-leak"}) {
    EXPECT_NE(r.out.find(id), std::string::npos) << id;
  }
}

TEST(RunCommand, CleanLoopIsBoundedWithZeroLeakedBytes) {
  const json report = run_json({"clean-loop"});
  EXPECT_EQ(report["schema"], "tleak.report/1");
  EXPECT_EQ(report["summary"]["verdict"], "bounded");
  EXPECT_EQ(report["totals"]["leaked_bytes"], 0);
  EXPECT_EQ(report["totals"]["leaked_blocks"], 0);
  EXPECT_EQ(report["summary"]["bounded_sites"], report["sites"].size());
  EXPECT_EQ(report["run"]["iterations"], 20);
  EXPECT_EQ(report["timeline"]["samples"].size(), 20u);
  EXPECT_EQ(report["timeline"]["after_teardown"]["live_bytes"], 0);
  // Two 64 KiB arrays live at each mark.
  EXPECT_EQ(report["totals"]["peak_live_bytes"], 2 * 64 * 1024);
}

TEST(RunCommand, AppendLoopIsGrowthAtTheBytesItAppendsPerIteration) {
  const json report = run_json({"append-loop", "--iterations", "40"});
  EXPECT_EQ(report["summary"]["verdict"], "growth");
  const json& site = top_site(report);
  EXPECT_EQ(site["verdict"], "growth");
  const double appended = 4096 * sizeof(float);  // a quarter of a 16 Ki-float activation
  EXPECT_NEAR(site["growth"]["slope_bytes_per_iteration"].get<double>(), appended, 0.05 * appended);
  EXPECT_GE(site["growth"]["confidence"].get<double>(), 0.9);
  EXPECT_EQ(site["leaked_bytes"], 0);  // freed at teardown: growth, not a leak
  EXPECT_NE(site["frames"][0]["function"].get<std::string>().find("append_result"), std::string::npos)
      << site["frames"][0];
  EXPECT_TRUE(site["frames"][0]["file"].get<std::string>().ends_with("basic_loops.cc"));
  EXPECT_NE(report["summary"]["sentence"].get<std::string>().find("growth: +16.0 KiB per iteration at"),
            std::string::npos)
      << report["summary"]["sentence"];
}

TEST(RunCommand, AppendLoopFixedIsBounded) {
  const json report = run_json({"append-loop", "--variant", "fixed"});
  EXPECT_EQ(report["summary"]["verdict"], "bounded");
  EXPECT_EQ(report["summary"]["growth_sites"], 0);
  // Each --threshold takes one value: the scenario may follow it.
  const ProcessResult before = tleak({"run", "--threshold", "growth_min_rise_bytes=1048576", "append-loop"});
  EXPECT_EQ(before.exit_code, 0) << before.err;
}

TEST(RunCommand, StackDepthDoesNotChangeTheVerdict) {
  for (const char* depth : {"1", "12", "32"}) {
    const json report = run_json({"append-loop", "--stack-depth", depth});
    EXPECT_EQ(report["summary"]["verdict"], "growth") << "depth " << depth;
    EXPECT_DOUBLE_EQ(top_site(report)["growth"]["slope_bytes_per_iteration"].get<double>(), 16384.0);
  }
}

TEST(RunCommand, ThresholdsCanBeOverriddenAndAreReported) {
  // Demanding a rise of 1 MiB turns the 16 KiB-per-iteration list into "bounded".
  const json report = run_json({"append-loop", "--threshold", "growth_min_rise_bytes=1048576",
                                "--threshold", "growth_min_confidence=0.9"});
  EXPECT_EQ(report["thresholds"]["growth_min_rise_bytes"], 1048576);
  EXPECT_DOUBLE_EQ(report["thresholds"]["growth_min_confidence"].get<double>(), 0.9);
  EXPECT_EQ(report["summary"]["growth_sites"], 0);
}

TEST(RunCommand, UntrackedRunReportsTotalsOnly) {
  const json report = run_json({"clean-loop", "--no-track"});
  EXPECT_FALSE(report["run"]["tracked"].get<bool>());
  EXPECT_TRUE(report["sites"].empty());
  EXPECT_EQ(report["totals"]["leaked_bytes"], 0);
}

TEST(RunCommand, ReportsValidateAgainstTheSchema) {
  const testing::ScratchDir dir("tleak-test-");
  std::vector<std::string> args = {TLEAK_SOURCE_DIR "/tests/validate_report.py",
                                   TLEAK_SOURCE_DIR "/schema/tleak.report.schema.json"};
  for (const char* scenario : {"clean-loop", "append-loop"}) {
    for (const char* variant : {"leaky", "fixed"}) {
      const std::string path = dir.file(std::string(scenario) + "-" + variant + ".json");
      ASSERT_EQ(tleak({"run", scenario, "--variant", variant, "--output", path}).exit_code, 0);
      args.push_back(path);
    }
  }
  const ProcessResult v = run_process("/usr/bin/python3", args);
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
}

// Every scenario and variant: the report holds the schema and the invariants of
// tests/validate_report.py (freed-at-last-use peak within the peak, blocks and bytes that add up).
TEST(RunCommand, EveryScenarioReportHoldsTheInvariants) {
  const testing::ScratchDir dir("tleak-test-");
  std::vector<std::string> args = {TLEAK_SOURCE_DIR "/tests/validate_report.py",
                                   TLEAK_SOURCE_DIR "/schema/tleak.report.schema.json"};
  const ProcessResult list = tleak({"list", "--format", "json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  for (const json& entry : json::parse(list.out)) {
    const std::string scenario = entry["id"];
    for (const std::string variant : entry["variants"]) {
      const std::string path = dir.file(scenario + "-" + variant + ".json");
      ASSERT_EQ(tleak({"run", scenario, "--variant", variant, "--output", path}).exit_code, 0) << scenario << " " << variant;
      args.push_back(path);
    }
  }
  ASSERT_GE(args.size(), 2u + 2 * 20);
  const ProcessResult v = run_process("/usr/bin/python3", args);
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
}

TEST(RunCommand, OutputFileAndTextSummary) {
  const testing::ScratchDir dir("tleak-test-");
  const std::string path = dir.file("report.json");
  const ProcessResult r = tleak({"run", "append-loop", "--output", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // With --output, stdout gets the text summary: verdict, sites, sparkline.
  EXPECT_NE(r.out.find("growth: +16.0 KiB per iteration"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("live  ▁"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("█  peak 448.0 KiB"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("append_result"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sites: 0 leak, 1 growth, 0 retained, 2 bounded\n"), std::string::npos) << r.out;
  std::ifstream in(path);
  const json report = json::parse(in);
  EXPECT_EQ(report["summary"]["verdict"], "growth");
  EXPECT_EQ(dir.entries(), 1u);  // no temporary left beside it
}

TEST(RunCommand, FailOnTurnsAFindingIntoExitOne) {
  EXPECT_EQ(tleak({"run", "append-loop", "--fail-on", "growth"}).exit_code, 1);
  EXPECT_EQ(tleak({"run", "append-loop", "--fail-on", "leak"}).exit_code, 0);
  EXPECT_EQ(tleak({"run", "clean-loop", "--fail-on", "any"}).exit_code, 0);
}

struct BadInput {
  std::vector<std::string> args;
  std::string message;
};

class RunCommandBadInput : public ::testing::TestWithParam<BadInput> {};

TEST_P(RunCommandBadInput, ExitsTwoWithOneLineAndNoOutput) { expect_refused(tleak(GetParam().args), GetParam().message); }

INSTANTIATE_TEST_SUITE_P(
    Errors, RunCommandBadInput,
    ::testing::Values(
        BadInput{{"run", "no-such-scenario"}, "unknown scenario 'no-such-scenario'; known scenarios: xla-rebind-loop, "},
        BadInput{{"run", "clean-loop", "--mode", "jit"}, "scenario 'clean-loop' does not run in mode 'jit' (it supports: eager)"},
        BadInput{{"run", "clean-loop", "--mode", "turbo"}, "--mode"},
        BadInput{{"run", "clean-loop", "--iterations", "0"}, "--iterations"},
        BadInput{{"run", "clean-loop", "--iterations", "many"}, "--iterations"},
        BadInput{{"run", "clean-loop", "--scale", "1000"}, "--scale"},
        BadInput{{"run", "clean-loop", "--stack-depth", "65"}, "--stack-depth"},
        BadInput{{"run", "clean-loop", "--variant", "broken"}, "scenario 'clean-loop' has no variant 'broken' (it has: leaky, fixed)"},
        BadInput{{"run", "clean-loop", "--output", "/nonexistent-dir/r.json"},
                 "/nonexistent-dir/r.json: cannot write: directory /nonexistent-dir does not exist"},
        BadInput{{"run"}, "scenario"},
        BadInput{{"run", "clean-loop", "--threshold", "speed=3"}, "unknown threshold 'speed'"},
        BadInput{{"run", "clean-loop", "--threshold", "leak_min_bytes=lots"},
                 "threshold leak_min_bytes: 'lots' is not a finite non-negative number"},
        BadInput{{"frobnicate"}, "unknown command 'frobnicate'; commands: list, explain, run"},
        BadInput{{"explain", "nope"}, "unknown scenario 'nope'"},
        // Scale 100 asks for a 100,000 x 100,000 device tensor: a clear refusal, not a crash.
        BadInput{{"run", "xla-large-intermediate", "--scale", "100"}, "device: out of memory: asked for"},
        BadInput{{"run", "xla-rebind-loop", "--scale", "100"}, "host-pool: out of memory: asked for"}));

TEST(RunCommand, ProgressLineOnlyWhenStderrIsATerminal) {
  if (access("/usr/bin/script", X_OK) != 0) GTEST_SKIP() << "script(1) is not installed";
  // script(1) gives the command a terminal; the progress line goes there, refreshed in place.
  const ProcessResult tty = run_process("/usr/bin/script", {"-qec", std::string(TLEAK_BINARY) + " run clean-loop --format text", "/dev/null"});
  EXPECT_EQ(tty.exit_code, 0);
  EXPECT_NE(tty.out.find("\rtleak: iteration 20/20"), std::string::npos) << tty.out;
  const ProcessResult piped = tleak({"run", "clean-loop", "--format", "text"});
  EXPECT_EQ(piped.err, "");
}

// ... and leaves no directory for memcheck's log behind (it had left an empty one in TMPDIR).
TEST(RunCommand, ValgrindOptionSaysHowToInstallValgrindWhenMissing) {
  const testing::ScratchDir tmp("tleak-test-tmp-");
  const ProcessResult r = run_process("/usr/bin/env", {"PATH=/nonexistent", "TMPDIR=" + tmp.file(""), TLEAK_BINARY,
                                                       "run", "clean-loop", "--valgrind"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--valgrind: valgrind is not installed (on Debian: apt-get install valgrind)"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(tmp.entries(), 0u);
}

TEST(RunCommand, OutputIntoADirectoryIsRefusedBeforeRunning) {
  const testing::ScratchDir dir("tleak-test-");
  const ProcessResult r = tleak({"run", "clean-loop", "--output", dir.file("")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("it is a directory"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tleak

namespace tleak {
namespace {

// -o never replaces what is not a regular file, follows a link to the file it names, and gives a
// new report the permissions the umask allows; a failed stdout is an error.
TEST(RunOutput, SpecialFilesAreWrittenThroughLinksFollowedUmaskKept) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tleak-output-test-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);

  struct stat before{}, after{};
  ASSERT_EQ(stat("/dev/null", &before), 0);
  EXPECT_EQ(testing::run_process(TLEAK_BINARY, {"run", "append-loop", "-o", "/dev/null"}).exit_code, 0);
  ASSERT_EQ(stat("/dev/null", &after), 0);
  EXPECT_TRUE(S_ISCHR(after.st_mode));
  EXPECT_EQ(before.st_rdev, after.st_rdev);

  const std::string fifo = (dir / "fifo").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const int reader = open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  const auto r = testing::run_process(TLEAK_BINARY, {"run", "clean-loop", "-o", fifo, "--format", "text"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  char head[16] = {};
  EXPECT_GT(read(reader, head, sizeof head - 1), 0);
  EXPECT_EQ(std::string(head).substr(0, 1), "{");
  close(reader);
  EXPECT_TRUE(std::filesystem::is_fifo(fifo));

  const std::string target = (dir / "target.json").string(), link = (dir / "link.json").string();
  std::ofstream(target) << "old\n";
  chmod(target.c_str(), 0600);
  std::filesystem::create_symlink(target, link);
  EXPECT_EQ(testing::run_process(TLEAK_BINARY, {"run", "append-loop", "-o", link}).exit_code, 0);
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_NE(std::ifstream(target).get(), 'o');  // replaced by the report
  ASSERT_EQ(stat(target.c_str(), &after), 0);
  EXPECT_EQ(after.st_mode & 0777, 0600u);  // a replaced file keeps its permissions

  const mode_t old_mask = umask(027);
  const std::string fresh = (dir / "fresh.json").string();
  EXPECT_EQ(testing::run_process(TLEAK_BINARY, {"run", "append-loop", "-o", fresh}).exit_code, 0);
  umask(old_mask);
  ASSERT_EQ(stat(fresh.c_str(), &after), 0);
  EXPECT_EQ(after.st_mode & 0777, 0640u);

  // stdout on a full device: one line, exit 2.
  const int full = open("/dev/full", O_WRONLY);
  if (full >= 0) {
    const int saved = dup(STDOUT_FILENO);
    pid_t pid = fork();
    if (pid == 0) {
      dup2(full, STDOUT_FILENO);
      execl(TLEAK_BINARY, TLEAK_BINARY, "run", "append-loop", static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 2);
    close(saved);
    close(full);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tleak

namespace tleak {
namespace {

// Numbers from outside are range-checked: nothing overflows into a negative limit.
TEST(RunNumbers, OutOfRangeThresholdsAndScalesAreRefused) {
  for (const std::string bad : {"growth_min_rise_bytes=1e30", "growth_min_rise_bytes=nan", "leak_min_bytes=9.3e18",
                                 "growth_min_confidence=2", "retained_min_drag_share=inf", "leak_min_bytes=1.5"}) {
    const auto r = testing::run_process(TLEAK_BINARY, {"run", "append-loop", "--threshold", bad});
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.out, "") << bad;
  }
  const auto r = testing::run_process(TLEAK_BINARY, {"run", "append-loop", "--scale", "nan"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(testing::run_process(TLEAK_BINARY, {"run", "append-loop", "--threshold", "tail_fraction=0.5"}).exit_code, 0);
}

}  // namespace
}  // namespace tleak

namespace tleak {
namespace {

// Too few iterations to assess growth: the report says so, and a growth gate does not pass.
TEST(RunShort, GrowthNotAssessedIsSaidAndFailsAGrowthGate) {
  const auto r = testing::run_process(TLEAK_BINARY, {"run", "append-loop", "--iterations", "5", "--fail-on", "growth"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("growth was not assessed (5 iterations; at least 6 needed)"), std::string::npos) << r.err;
  const nlohmann::json report = nlohmann::json::parse(r.out);
  EXPECT_FALSE(report["total_growth"]["assessed"]);
  EXPECT_NE(report["summary"]["sentence"].get<std::string>().find("growth not assessed"), std::string::npos);
  for (const auto& site : report["sites"]) {
    EXPECT_EQ(site["reason"].get<std::string>().find("no trend"), std::string::npos) << site["reason"];
  }
  EXPECT_EQ(testing::run_process(TLEAK_BINARY, {"run", "append-loop", "--iterations", "6", "--fail-on", "leak"}).exit_code, 0);
}

}  // namespace
}  // namespace tleak

namespace tleak {
namespace {

// memcheck's log: never at a predictable name in /tmp, and a '%' in --output's name is kept.
TEST(RunValgrind, LogBesideTheOutputEvenWithPercentInItsName) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tleak-valgrind-test-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string output = (dir / "run%p.json").string();
  const auto r = testing::run_process(TLEAK_BINARY, {"run", "custom-op-scratch", "--valgrind", "-o", output});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(output + ".memcheck.log"));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 2);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tleak

namespace tleak {
namespace {

// SIGTERM to tleak --valgrind: memcheck is not left running, and no report (or part of one) is
// left, nor any of the run's temporary files (the child's report, memcheck's log and its private
// directory, all in TMPDIR: once left behind at each interruption).
TEST(RunInterrupted, ValgrindChildEndsWithTleakAndNothingIsLeftBehind) {
  const testing::ScratchDir dir("tleak-interrupt-test-"), tmp("tleak-interrupt-tmp-");
  const std::string output = dir.file("r.json");
  const pid_t tleak = fork();
  if (tleak == 0) {
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
    setenv("TMPDIR", tmp.path().c_str(), 1);
    execl(TLEAK_BINARY, TLEAK_BINARY, "run", "jit-warmup-cache", "--valgrind", "-o", output.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait for memcheck to be running under it.
  pid_t memcheck = 0;
  for (int i = 0; i < 200 && memcheck == 0; ++i) {
    std::ifstream children("/proc/" + std::to_string(tleak) + "/task/" + std::to_string(tleak) + "/children");
    children >> memcheck;
    if (memcheck == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_GT(memcheck, 0);
  kill(tleak, SIGTERM);
  int status = 0;
  waitpid(tleak, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status));
  // Memcheck ends the run it was given the signal in with its leak check (seconds, with the rest of
  // the suite running beside it).
  bool gone = false;
  for (int i = 0; i < 600 && !gone; ++i) {
    gone = kill(memcheck, 0) != 0;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(gone);
  EXPECT_EQ(dir.entries(), 0u);
  std::vector<std::string> left;
  for (const auto& entry : std::filesystem::directory_iterator(tmp.path())) left.push_back(entry.path().filename().string());
  EXPECT_TRUE(left.empty()) << "left in TMPDIR: " << ::testing::PrintToString(left);
}

}  // namespace
}  // namespace tleak

namespace tleak {
namespace {

TEST(RunOptions, OptionsAnUntrackedRunCannotHonourAreRefused) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"run", "append-loop", "--no-track", "--fail-on", "leak"},
        {"run", "append-loop", "--no-track", "--threshold", "leak_min_bytes=2"}}) {
    const auto r = testing::run_process(TLEAK_BINARY, args);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--no-track"), std::string::npos) << r.err;
  }
  EXPECT_EQ(testing::run_process(TLEAK_BINARY, {"run", "append-loop", "--no-track"}).exit_code, 0);
}

}  // namespace
}  // namespace tleak
