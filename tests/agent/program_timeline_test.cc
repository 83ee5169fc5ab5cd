// A program's iterations and moments: growth per mark or per time sample, snapshots (by the program
// or by a signal to tleak) and their diff, the budget guard, and `tleak check` of a command.
#include "program_run.h"

#include <algorithm>

namespace tleak::program_tests {

namespace {

TEST_F(ProgramRun, SnapshotsAreFullReportsThatDiffCompares) {
  ASSERT_EQ(tleak_run({}, {program("growth"), "leaky"}).exit_code, 0);
  const std::string early = path("report.snapshot-1-early.json"), late = path("report.snapshot-2-late.json");
  ASSERT_TRUE(std::filesystem::exists(early));
  ASSERT_TRUE(std::filesystem::exists(late));
  const Json a = Json::parse(std::ifstream(early)), b = Json::parse(std::ifstream(late));
  EXPECT_EQ(a["run"]["program"]["snapshot"], "early");
  EXPECT_EQ(a["run"]["iterations"], 10);
  EXPECT_EQ(a["totals"]["final_live_bytes"], 10 * 4096);
  EXPECT_EQ(b["totals"]["final_live_bytes"], 20 * 4096);
  const auto v = run_process("/usr/bin/python3", {std::string(TLEAK_SOURCE_DIR) + "/tests/validate_report.py",
                                                  std::string(TLEAK_SOURCE_DIR) + "/schema/tleak.report.schema.json",
                                                  early, late, path("report.json")});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  const auto d = run_process(TLEAK_BINARY, {"diff", early, late});
  EXPECT_EQ(d.exit_code, 0) << d.err;
  EXPECT_NE(d.out.find("live at last iteration: 40.0 KiB -> 80.0 KiB"), std::string::npos) << d.out;
}

// A fixed run that lists one site (--max-sites 1: its 64 KiB scratch buffer) beside the leaky run:
// the growing site is not in A's list, and every site A left out peaked at most 4 KiB (the KEEP
// block it frees every iteration among them). The diff says the site is not listed in A, not new,
// and its peak grew by at least 116 KiB (120 KiB less A's bound), not by 120 KiB from nothing.
TEST_F(ProgramRun, ADiffAgainstAReportThatLeftSitesOutBoundsWhatItCannotSee) {
  ASSERT_EQ(tleak_run({"--max-sites", "1"}, {program("growth"), "fixed"}).exit_code, 0);
  ASSERT_EQ(report_["sites"].size(), 1u);
  const std::int64_t left_out_peak = report_["omitted_sites"]["largest_peak_live_bytes"].get<std::int64_t>();
  EXPECT_EQ(left_out_peak, 4096);
  std::filesystem::rename(path("report.json"), path("fixed.json"));
  ASSERT_EQ(tleak_run({}, {program("growth"), "leaky"}).exit_code, 0);
  const std::int64_t kept_peak = site_at(at("growth.c", "KEEP"))["peak_live_bytes"].get<std::int64_t>();
  EXPECT_EQ(kept_peak, 30 * 4096);
  const auto d = run_process(TLEAK_BINARY, {"diff", path("fixed.json"), path("report.json"), "--format", "json"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  const Json diff = Json::parse(d.out);
  EXPECT_EQ(diff["counts"]["new"], 0);
  const std::string keep_line = "growth.c:" + std::to_string(line_of("growth.c", "KEEP"));
  int seen = 0;
  for (const Json& s : diff["sites"]) {
    if (s["label"].get<std::string>().find(keep_line) == std::string::npos) continue;
    ++seen;
    EXPECT_EQ(s["status"], "unlisted_a");
    EXPECT_TRUE(s["peak_live_bytes"]["a"].is_null());
    EXPECT_EQ(s["unlisted_peak_at_most"], left_out_peak);
    std::map<std::string, std::int64_t> regressions;
    for (const Json& r : s["regressions"]) regressions[r["kind"]] = r["bytes"];
    EXPECT_EQ(regressions.at("growth"), 4096);
    EXPECT_EQ(regressions.at("peak"), kept_peak - left_out_peak);
  }
  EXPECT_EQ(seen, 1) << d.out;
  const auto text = run_process(TLEAK_BINARY, {"diff", path("fixed.json"), path("report.json"), "--fail-on", "growth"});
  EXPECT_EQ(text.exit_code, 1) << text.err;
  EXPECT_NE(text.out.find("[not listed in A] main (" + keep_line + ")"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("peak at most 4.0 KiB -> 120.0 KiB"), std::string::npos) << text.out;
  // A program's uses are not seen: its dead-but-held bytes are unknown, not 0 B.
  EXPECT_FALSE(diff["totals"]["retained_measured"]["a"].get<bool>());
  EXPECT_NE(text.out.find("retained peak: not measured -> not measured (no uses seen: tleak does not see a program's)"), std::string::npos)
      << text.out;
}

// A report is named by the program the user ran (run.scenario, the summary's first line, the
// default report file): a Python program by its script or -m module, not "python3.11"; a "#!"
// script by itself, not its interpreter; a program that exec'd another by the new image.
TEST_F(ProgramRun, AReportIsNamedByTheProgramTheUserRan) {
  const std::string script = path("train.py");
  std::ofstream(script) << "#!" << TLEAK_PYTHON << "\nimport sys\nprint(len(sys.argv))\n";
  ASSERT_EQ(chmod(script.c_str(), 0755), 0);
  const auto named = [&](const std::vector<std::string>& command, const std::string& name) {
    const auto r = tleak_run({}, command);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(report_["run"]["scenario"], name) << command.back();
    EXPECT_NE(("\n" + r.err).find("\ntleak " + name + " (program, "), std::string::npos) << r.err;
  };
  named({TLEAK_PYTHON, script, "--epochs", "3"}, "train.py");
  named({script}, "train.py");  // its interpreter is python3, its name its own
  // A command line longer than the agent reads (64 KiB) still names its script.
  named({TLEAK_PYTHON, script, std::string(70'000, 'x')}, "train.py");
  named({TLEAK_PYTHON, "-m", "this"}, "this");
  named({"/bin/sh", "-c", std::string("exec ") + TLEAK_PYTHON + " " + script}, "train.py");
  const std::string wrapper = path("wrapper.sh");
  std::ofstream(wrapper) << "#!/bin/sh\necho wrapped\n";
  ASSERT_EQ(chmod(wrapper.c_str(), 0755), 0);
  named({wrapper}, "wrapper.sh");
  // Code without a file names no script: the interpreter's own name.
  const std::string interpreter = std::filesystem::canonical(TLEAK_PYTHON).filename().string();
  named({TLEAK_PYTHON, "-c", "pass"}, interpreter);
  named({"/bin/sh", "-c", "exec " + program("growth") + " fixed"}, "growth");

  // Without --output, the report is named after the program, its name cut to 64 characters of
  // those a file name keeps as they are: a script's name may be as long as a file name can be.
  const std::string long_name = std::string(245, 'a') + " b.py";
  std::ofstream(path(long_name)) << "print('long')\n";
  const std::string cwd = path("cwd");
  std::filesystem::create_directory(cwd);
  const auto r = run_process("/usr/bin/env", {"-C", cwd, TLEAK_BINARY, "run", "--", TLEAK_PYTHON, path(long_name)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> written;
  for (const auto& entry : std::filesystem::directory_iterator(cwd)) written.push_back(entry.path().filename());
  ASSERT_EQ(written.size(), 1u);
  EXPECT_EQ(written[0].rfind("tleak-" + std::string(64, 'a') + "-", 0), 0u) << written[0];
  EXPECT_EQ(Json::parse(std::ifstream(cwd + "/" + written[0]))["run"]["scenario"], long_name);
}

TEST_F(ProgramRun, MaxLiveStopsARunawayProgramAndStillReports) {
  const auto started = std::chrono::steady_clock::now();
  const auto r = tleak_run({"--max-live", "64MiB"}, {program("runaway")});
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(30));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(report_["run"]["program"]["stopped_by"], "max-live");
  EXPECT_EQ(report_["run"]["program"]["exit_signal"], SIGKILL);
  EXPECT_GT(report_["totals"]["peak_live_bytes"].get<std::int64_t>(), 64 << 20);
  EXPECT_LT(report_["totals"]["peak_live_bytes"].get<std::int64_t>(), 128 << 20);  // stopped soon after
  EXPECT_FALSE(report_["run"]["program"]["exit_scan"]);
  EXPECT_EQ(report_["totals"]["leaked_bytes"], 0);  // nothing judged a leak without the exit scan
  EXPECT_GT(report_["totals"]["unjudged_at_exit_bytes"].get<std::int64_t>(), 64 << 20);
  std::vector<std::string> notes;
  for (const Json& note : report_["notes"]) notes.push_back(note.get<std::string>());
  EXPECT_NE(std::find(notes.begin(), notes.end(),
                      "no exit scan: tleak stopped the program (--max-live), so blocks left allocated are reported "
                      "as unjudged, not as leaks"),
            notes.end())
      << report_["notes"];
}

// A program without marks is sampled by time, and what it says is per sample: a slope per 50 ms,
// over samples, never "per iteration" of a loop tleak knows nothing of.
TEST_F(ProgramRun, GrowthWithoutMarksIsPerSamplePeriod) {
  const auto r = tleak_run({"--sample-every", "50ms"}, {program("timed_growth")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(report_["run"]["program"]["clock"], "time");
  EXPECT_DOUBLE_EQ(report_["run"]["program"]["sample_seconds"].get<double>(), 0.05);
  const Json& keep = site_at(at("timed_growth.c", "KEEP"));
  EXPECT_EQ(keep["verdict"], "growth") << keep["reason"];
  // 4 KiB every 5 ms (and a little more: each sleep overshoots): about 40 KiB per 50 ms.
  const double slope = keep["growth"]["slope_bytes_per_iteration"];
  EXPECT_GT(slope, 20 * 1024.0) << keep["reason"];
  EXPECT_LT(slope, 44 * 1024.0) << keep["reason"];
  const std::string reason = keep["reason"];
  // "... per 50 ms over samples 3-12 (tau ...)", or "since sample N" should the fit find a late start.
  EXPECT_NE(reason.find(" per 50 ms "), std::string::npos) << reason;
  EXPECT_NE(reason.find(" samples "), std::string::npos) << reason;
  EXPECT_EQ(reason.find("iteration"), std::string::npos) << reason;
  const std::string sentence = report_["summary"]["sentence"];
  EXPECT_EQ(sentence.rfind("growth: +", 0), 0u) << sentence;
  EXPECT_NE(sentence.find(" per 50 ms at main (" + at("timed_growth.c", "KEEP")), std::string::npos) << sentence;
  // The summary tleak prints (to stderr: the program's output is the program's).
  EXPECT_EQ(r.err.find("iteration"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(program, "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" time samples, one every 50 ms)"), std::string::npos) << r.err;

  // tleak diff of two such reports reads their clock: the growth is per 50 ms there too.
  const auto d = run_process(TLEAK_BINARY, {"diff", path("report.json"), path("report.json")});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_NE(d.out.find("/50 ms -> "), std::string::npos) << d.out;
  EXPECT_EQ(d.out.find("/iter"), std::string::npos) << d.out;
  // A period no run can have is a malformed report: one line, exit 2.
  Json bad = report_;
  bad["run"]["program"]["sample_seconds"] = 0;
  std::ofstream(path("bad.json")) << bad.dump();
  const auto refused = run_process(TLEAK_BINARY, {"diff", path("report.json"), path("bad.json")});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("\"sample_seconds\" in run.program is out of range"), std::string::npos) << refused.err;
  // The run's program is part of every report (null for a scenario's): one without it is malformed.
  Json without = report_;
  without["run"].erase("program");
  std::ofstream(path("without.json")) << without.dump();
  const auto no_program = run_process(TLEAK_BINARY, {"diff", path("report.json"), path("without.json")});
  EXPECT_EQ(no_program.exit_code, 2);
  EXPECT_NE(no_program.err.find("no \"program\" in run"), std::string::npos) << no_program.err;
}

// A program without marks that ran too short for the samples growth needs: a note says what
// period would give them, and a run with that period finds the growth.
TEST_F(ProgramRun, TooFewTimeSamplesSayWhatPeriodGivesEnough) {
  ASSERT_EQ(tleak_run({"--sample-every", "300ms"}, {program("timed_growth")}).exit_code, 0);
  ASSERT_FALSE(report_["total_growth"]["assessed"].get<bool>());
  std::string advice;
  for (const Json& note : report_["notes"]) {
    const std::string text = note;
    if (text.rfind("growth not assessed: ", 0) == 0) advice = text;
  }
  std::smatch period;
  ASSERT_TRUE(std::regex_search(advice, period, std::regex(R"(sample more often \(--sample-every (\d+)ms\))"))) << advice;
  EXPECT_NE(advice.find(" time samples of 300 ms, at least 6 needed: "), std::string::npos) << advice;
  EXPECT_NE(advice.find("tleak_mark_iteration()"), std::string::npos) << advice;
  ASSERT_EQ(tleak_run({"--sample-every", period[1].str() + "ms"}, {program("timed_growth")}).exit_code, 0);
  EXPECT_EQ(site_at(at("timed_growth.c", "KEEP"))["verdict"], "growth");
  EXPECT_EQ(report_["notes"].dump().find("growth not assessed"), std::string::npos) << report_["notes"];
  // A program too short to sample at all gets no such advice.
  ASSERT_EQ(tleak_run({}, {"/bin/true"}).exit_code, 0);
  EXPECT_EQ(report_["notes"].dump().find("growth not assessed"), std::string::npos) << report_["notes"];
  // Nor one that ran long but allocated and freed only as it started, for which a shorter period
  // would give no sample either: marks are the advice.
  ASSERT_EQ(tleak_run({"--sample-every", "50ms"}, {"/bin/sleep", "0.3"}).exit_code, 0);
  const std::string notes = report_["notes"].dump();
  EXPECT_NE(notes.find("growth not assessed: no time sample, at least 6 needed (one is taken by the first allocation "
                       "or free after each 50 ms, and the program made none after its first 50 ms): mark the "
                       "program's loop"),
            std::string::npos)
      << notes;
  EXPECT_EQ(notes.find("--sample-every"), std::string::npos) << notes;
}

// The sample period's range ends at an hour, and an hour can be said as the range says it.
TEST_F(ProgramRun, TheLongestSamplePeriodIsAnHour) {
  for (const std::string period : {"1h", "60m", "3600s"}) {
    ASSERT_EQ(tleak_run({"--sample-every", period}, {"/bin/true"}).exit_code, 0) << period;
    EXPECT_DOUBLE_EQ(report_["run"]["program"]["sample_seconds"].get<double>(), 3600.0) << period;
  }
  const auto r = tleak_run({"--sample-every", "61m"}, {"/bin/true"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "tleak: --sample-every: '61m' is out of range (1 ms to 1 hour)\n");
}

// A program that only frees for a while (a teardown) is still sampled, and still answers tleak's
// requests for a flush: the frees serve them, not only the allocations.
TEST_F(ProgramRun, AProgramThatOnlyFreesIsStillSampled) {
  const auto r = tleak_run({"--sample-every", "20ms"}, {program("free_only_phase")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(report_["run"]["program"]["clock"], "time");
  const Json& block = site_at(at("free_only_phase.c", "BLOCK"));
  EXPECT_EQ(block["verdict"], "bounded");
  EXPECT_EQ(block["allocations"], 64);
  EXPECT_EQ(block["peak_live_bytes"], 64 * 16384);
  // 320 ms of frees at one every 5 ms, sampled every 20 ms: about 16 samples, each 4 blocks fewer.
  const std::vector<std::int64_t> samples = block["live_bytes_at_samples"];
  // From the sample that saw the most on, the program only frees. (On a loaded machine the 64
  // allocations themselves may outlast a sampling period: a sample then sees some of them.)
  ASSERT_FALSE(samples.empty());
  const auto all = std::max_element(samples.begin(), samples.end());
  std::set<std::int64_t> between;
  for (auto i = all; i != samples.end(); ++i) {
    if (i != all) {
      EXPECT_LE(*i, *(i - 1)) << "live bytes rose while the program only freed";
    }
    if (*i > 0 && *i < 64 * 16384) between.insert(*i);
  }
  EXPECT_GE(between.size(), 5u) << report_["sites"].dump(1).substr(0, 2000);
}

TEST_F(ProgramRun, SignalToTleakWritesASnapshot) {
  pid_t pid = 0;
  const std::string report = path("report.json");
  std::vector<std::string> args = {TLEAK_BINARY, "run", "--max-live", "256MiB", "-o", report, "--", program("runaway")};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  ASSERT_EQ(posix_spawn(&pid, TLEAK_BINARY, nullptr, nullptr, argv.data(), environ), 0);
  // tleak takes the signal over before it starts the program: once the program exists, the signal
  // is tleak's to handle (a fixed 100 ms sleep was too short for an ASan build of tleak on a slow
  // day, and the signal's default action ended it). The program then runs for 256 ms at least.
  const std::string children = "/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children";
  std::string child;
  for (int wait = 0; wait < 3000 && child.empty(); ++wait) {
    std::ifstream(children) >> child;
    if (child.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_FALSE(child.empty()) << "tleak started no program in 30 s";
  kill(pid, SIGUSR2);
  int status = 0;
  waitpid(pid, &status, 0);
  // The snapshot exists if the signal arrived while the program ran.
  bool found = false;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    found = found || entry.path().filename().string().find("report.snapshot-1-signal") == 0;
  }
  EXPECT_TRUE(found);
}

TEST_F(ProgramRun, CheckGatesCommandsLikeScenarios) {
  const std::string checks = path("checks.json");
  Json j = {{"schema", "tleak.checks/1"},
            {"checks",
             {{{"command", {program("growth"), "leaky"}}, {"expect", {{"verdict", "growth"}}}},
              {{"command", {program("growth"), "fixed"}}, {"expect", {{"verdict", "bounded"}}}},
              {{"command", {program("exit_reachability")}}, {"expect", {{"max_leaked_bytes", 0}}}}}}};
  std::ofstream(checks) << j.dump();
  const auto r = run_process(TLEAK_BINARY, {"check", "--checks", checks, "--junit", path("junit.xml")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("PASS  command " + program("growth") + " leaky: growth"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("PASS  command " + program("growth") + " fixed: bounded"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("FAIL  command " + program("exit_reachability") + ": leaked 3500 bytes, limit 0"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 passed, 1 failed"), std::string::npos) << r.out;

  // Baselines of commands, then a comparison against them.
  const std::string baselines = path("baselines");
  Json ok = {{"schema", "tleak.checks/1"}, {"checks", {{{"command", {program("growth"), "fixed"}}}}}};
  std::ofstream(checks) << ok.dump();
  EXPECT_EQ(run_process(TLEAK_BINARY, {"check", "--checks", checks, "--baseline", baselines, "--update-baseline"}).exit_code, 0);
  const auto again = run_process(TLEAK_BINARY, {"check", "--checks", checks, "--baseline", baselines});
  EXPECT_EQ(again.exit_code, 0) << again.out << again.err;
  // A baseline whose report names the program otherwise (as an older tleak named a Python program
  // by its interpreter) is still the command's: found by its command line, it is compared.
  for (const auto& entry : std::filesystem::directory_iterator(baselines)) {
    Json old_name = Json::parse(std::ifstream(entry.path()));
    old_name["run"]["scenario"] = "python3.11";
    std::ofstream(entry.path()) << old_name.dump();
  }
  const auto renamed = run_process(TLEAK_BINARY, {"check", "--checks", checks, "--baseline", baselines});
  EXPECT_EQ(renamed.exit_code, 0) << renamed.out << renamed.err;

  // All or nothing: one failing program (resize_fork exits 7) and no baseline is written at all.
  const std::string fresh_baselines = path("fresh-baselines");
  Json mixed = {{"schema", "tleak.checks/1"},
                {"checks", {{{"command", {program("growth"), "fixed"}}}, {{"command", {program("resize_fork")}}}}}};
  std::ofstream(checks) << mixed.dump();
  const auto partial = run_process(TLEAK_BINARY, {"check", "--checks", checks, "--baseline", fresh_baselines, "--update-baseline"});
  EXPECT_EQ(partial.exit_code, 1) << partial.out << partial.err;
  EXPECT_NE(partial.err.find("baselines not updated"), std::string::npos) << partial.err;
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(fresh_baselines), {}), 0);

  Json bad = {{"schema", "tleak.checks/1"}, {"checks", {{{"command", {program("growth")}}, {"scenario", "append-loop"}}}}};
  std::ofstream(checks) << bad.dump();
  const auto refused = run_process(TLEAK_BINARY, {"check", "--checks", checks});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("takes no scenario"), std::string::npos) << refused.err;
}

}  // namespace
}  // namespace tleak::program_tests
