// `tleak run --record NAME -- COMMAND`: the process recorded is the first one the command starts,
// itself or through others (a wrapper script, a launcher), that runs NAME; the others run as they
// would, unrecorded, and the report says which process it is of.
#include "program_run.h"

#include <regex>

namespace tleak::program_tests {
namespace {

class RecordRun : public ProgramRun {
 protected:
  // A "#!/bin/sh" script of `lines` in the test's directory, executable.
  std::string shell_script(const std::string& name, const std::string& lines) {
    const std::string file = path(name);
    std::ofstream(file) << "#!/bin/sh\n" << lines;
    EXPECT_EQ(chmod(file.c_str(), 0755), 0);
    return file;
  }
  std::vector<std::string> notes() const {
    std::vector<std::string> out;
    for (const Json& note : report_["notes"]) out.push_back(note.get<std::string>());
    return out;
  }
  // The note that names the process recorded, and the report's pid is that process's.
  std::string record_note() const {
    for (const std::string& note : notes()) {
      if (note.rfind("tleak recorded process ", 0) == 0) return note;
    }
    ADD_FAILURE() << "no note on the process recorded in " << report_["notes"];
    return {};
  }
};

// The shell does not exec the program (a command follows it): without --record tleak would record
// the shell. With it, the program's leaks are found exactly as when tleak runs it itself, its other
// thread's registers read through ptrace though it is not tleak's child; the command's exit status
// is the report's, and tleak's own code says the command failed.
TEST_F(RecordRun, TheNamedProgramIsRecordedThroughAWrapperScript) {
  const std::string wrapper =
      shell_script("train.sh", "echo before\n" + program("exit_reachability") + "\necho after\nexit 5\n");
  const auto r = tleak_run({"--record", "exit_reachability"}, {wrapper});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(r.out.substr(0, 7), "before\n");
  EXPECT_EQ(r.out.substr(r.out.size() - 6), "after\n");
  const Json& run = report_["run"];
  EXPECT_EQ(run["scenario"], "exit_reachability");
  EXPECT_EQ(run["program"]["record"], "exit_reachability");
  EXPECT_EQ(run["program"]["exit_status"], 5);
  EXPECT_EQ(run["program"]["command"], Json::array({wrapper}));
  EXPECT_TRUE(run["program"]["exit_scan"]);
  expect_exit_reachability_figures();
  const std::string note = record_note();
  EXPECT_EQ(note, "tleak recorded process " + std::to_string(run["program"]["pid"].get<std::int64_t>()) +
                      ", the first to run exit_reachability (--record); the command's other processes were not "
                      "recorded (dash)");
  for (const std::string& n : notes()) EXPECT_EQ(n.find("registers"), std::string::npos) << n;
}

// A wrapper that leaves a process running as it exits, which only then runs the program: tleak
// waits for it, and the program's exit scan still judges its blocks.
TEST_F(RecordRun, AProgramTheWrapperLeftRunningIsWaitedFor) {
  const std::string wrapper =
      shell_script("detach.sh", "(sleep 2; exec " + program("exit_reachability") + ") &\necho wrapper done\n");
  const auto started = std::chrono::steady_clock::now();
  const auto r = tleak_run({"--record", "exit_reachability"}, {wrapper});
  EXPECT_GE(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(1500));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "wrapper done\nexit-reachability done\n");
  // A second after the wrapper ended, tleak said what it waits for.
  EXPECT_EQ(r.err.rfind("tleak: '" + wrapper + "' ended; waiting for the processes it left running, which hold "
                        "tleak's socket: one may yet run exit_reachability\n", 0), 0u) << r.err;
  EXPECT_EQ(report_["run"]["program"]["exit_status"], 0);
  EXPECT_TRUE(report_["run"]["program"]["exit_scan"]);
  expect_exit_reachability_figures();
}

// The program already recorded when the wrapper exits, running on: tleak waits for it, and a second
// after the wrapper ended says so (the program runs on for more than a second after it).
TEST_F(RecordRun, ARecordedProgramThatOutlivesTheWrapperIsWaitedFor) {
  const std::string wrapper = shell_script(
      "background.sh", std::string(TLEAK_PYTHON) + " -c 'import time; time.sleep(2); print(\"slept\")' &\nsleep 0.2\n");
  const auto r = tleak_run({"--record", "python3"}, {wrapper});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "slept\n");
  EXPECT_TRUE(report_["run"]["program"]["exit_scan"]);
  const std::string pid = std::to_string(report_["run"]["program"]["pid"].get<std::int64_t>());
  EXPECT_EQ(r.err.rfind("tleak: '" + wrapper + "' ended; waiting for python3 (pid " + pid + "), which it left running\n", 0),
            0u) << r.err;
}

// Only the first process to run the name is recorded; a second is one of the others.
TEST_F(RecordRun, OnlyTheFirstProcessToRunTheNameIsRecorded) {
  const std::string wrapper =
      shell_script("twice.sh", program("growth") + " leaky\n" + program("exit_reachability") + "\n" +
                                   program("growth") + " fixed\n");
  const auto r = tleak_run({"--record", "growth"}, {wrapper});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "growth leaky done\nexit-reachability done\ngrowth fixed done\n");
  EXPECT_EQ(report_["run"]["program"]["record"], "growth");
  EXPECT_EQ(report_["summary"]["growth_sites"], 1);  // the leaky run's, not the fixed one's
  const std::string note = record_note();
  EXPECT_NE(note.find("were not recorded (dash, exit_reachability, growth)"), std::string::npos) << note;
}

// Python's subprocess closes the descriptors a child inherits unless told not to (and launchers
// built on it): such a child connects to tleak by name instead, and is recorded as exactly; given
// close_fds=False it writes to the socket it inherited.
TEST_F(RecordRun, AProcessThatLostTleaksDescriptorsIsRecordedToo) {
  for (const std::string close_fds : {"True", "False"}) {
    const std::string launcher = path("launcher.py");
    std::ofstream(launcher) << "import subprocess\nsubprocess.run(['" << program("exit_reachability")
                            << "'], check=True, close_fds=" << close_fds << ")\n";
    const auto r = tleak_run({"--record", "exit_reachability"}, {TLEAK_PYTHON, launcher});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "exit-reachability done\n");
    expect_exit_reachability_figures();
    EXPECT_NE(record_note().find("were not recorded (launcher.py)"), std::string::npos) << record_note();
  }
}

// The images the process recorded execs keep the recording (the same pid), whichever way it
// reached tleak: the one that inherited the socket writes on, the one that connected connects anew
// (its connection closed by the exec) and tleak reads the old one to its end first.
TEST_F(RecordRun, TheRecordedProcessKeepsTheRecordingAcrossExec) {
  for (const std::string close_fds : {"True", "False"}) {
    const std::string launcher = path("launcher.py");
    std::ofstream(launcher) << "import subprocess\nsubprocess.run(['/bin/sh', '-c', 'exec "
                            << program("exit_reachability") << "'], check=True, close_fds=" << close_fds << ")\n";
    const auto r = tleak_run({"--record", "sh"}, {TLEAK_PYTHON, launcher});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(report_["run"]["scenario"], "exit_reachability");
    EXPECT_EQ(report_["run"]["program"]["record"], "sh");
    expect_exit_reachability_figures();
  }
}

// The same when the command has already ended as the process recorded execs: its connection ends
// with the exec and the process runs on; tleak waits a while for the new image's connection, not
// only for the process's end. Here the process passes through an image without the agent (a static
// program that execs the next one 300 ms later).
TEST_F(RecordRun, AnExecAfterTheCommandEndedKeepsTheRecording) {
  const std::string launcher = path("launcher.py");
  std::ofstream(launcher) << "import subprocess\nsubprocess.Popen(['/bin/sh', '-c', 'sleep 0.5; exec "
                          << program("static_program") << " exec 300 " << program("exit_reachability") << "'])\n";
  const auto r = tleak_run({"--record", "sh"}, {TLEAK_PYTHON, launcher});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "exit-reachability done\n");
  EXPECT_EQ(report_["run"]["scenario"], "exit_reachability");
  EXPECT_TRUE(report_["run"]["program"]["exit_scan"]);
  expect_exit_reachability_figures();
}

// A launcher that starts a process without waiting and exits at once: that process lost tleak's
// descriptors, and runs the program only later (here 300 ms). Nothing holds tleak's stream in
// between; tleak still listens for a while, and records it.
TEST_F(RecordRun, AProgramStartedAfterTheLastHolderEndedIsRecorded) {
  const std::string launcher = path("launcher.py");
  std::ofstream(launcher) << "import subprocess\nsubprocess.Popen(['/bin/sh', '-c', 'sleep 0.3; exec "
                          << program("exit_reachability") << "'])\n";
  const auto r = tleak_run({"--record", "exit_reachability"}, {TLEAK_PYTHON, launcher});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "exit-reachability done\n");
  expect_exit_reachability_figures();
  EXPECT_NE(record_note().find("were not recorded (dash, launcher.py, sleep)"), std::string::npos) << record_note();
}

// One that can reach tleak by neither way (its descriptors closed, and in another network
// namespace, where tleak's abstract socket is not): tleak says why it recorded nothing.
TEST_F(RecordRun, AProcessThatCannotReachTleakIsNamedInTheRefusal) {
  if (run_process("/usr/bin/unshare", {"--net", "/bin/true"}).exit_code != 0) {
    GTEST_SKIP() << "unshare --net is not allowed here";
  }
  const std::string launcher = path("launcher.py");
  std::ofstream(launcher) << "import subprocess\nsubprocess.run(['/usr/bin/unshare', '--net', '"
                          << program("exit_reachability") << "'], check=True)\n";
  const auto r = tleak_run({"--record", "exit_reachability"}, {TLEAK_PYTHON, launcher});
  expect_refused(r, "(it ran exit_reachability (could not reach tleak), launcher.py; the command ended with exit "
                    "status 0): one did, but could not "
                    "reach tleak: its parent had closed the descriptors");
}

// A statically linked launcher cannot load the agent (tleak refuses to run one without --record),
// but passes it on to the program it starts.
TEST_F(RecordRun, AStaticLauncherIsLookedPast) {
  const auto r = tleak_run({"--record", "exit_reachability"}, {program("static_program"), program("exit_reachability")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "exit-reachability done\n");
  expect_exit_reachability_figures();
  EXPECT_EQ(record_note().find("not recorded"), std::string::npos) << record_note();  // the launcher never said so
}

// A Python launcher that is itself python3 starts its worker with subprocess: NAME is the worker's
// script, as a Python process's target (the script, or the module -m names).
TEST_F(RecordRun, APythonWorkerIsNamedByItsScript) {
  const std::string worker = path("worker.py");
  std::ofstream(worker) << "import tleak\nkept = []\nfor i in range(30):\n    kept.append(bytearray(100000))  # KEEP\n"
                           "    tleak.mark_iteration()\nprint('worker done')\n";
  const std::string launcher = path("launcher.py");
  std::ofstream(launcher) << "import subprocess, sys\nsubprocess.run([sys.executable, '-u', '" << worker
                          << "'], check=True)\n";
  const auto r = tleak_run({"--record", "worker.py"}, {TLEAK_PYTHON, launcher});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "worker done\n");
  EXPECT_EQ(report_["run"]["scenario"], "worker.py");
  EXPECT_EQ(report_["run"]["program"]["clock"], "iterations");
  const Json& kept = site_at("worker.py:4 in <module>");
  EXPECT_EQ(kept["verdict"], "growth");
  const double slope = kept["growth"]["slope_bytes_per_iteration"];
  EXPECT_GE(slope, 100000);
  EXPECT_LE(slope, 100100);
  // Python processes are named in the note by their script: what --record takes.
  EXPECT_NE(record_note().find("were not recorded (launcher.py)"), std::string::npos) << record_note();
}

// --max-live stops the process recorded, and the command with it, as it would a program tleak ran
// itself.
TEST_F(RecordRun, MaxLiveStopsTheRecordedProcessAndTheCommand) {
  const std::string wrapper = shell_script("runaway.sh", program("runaway") + "\necho after\nsleep 60\n");
  const auto started = std::chrono::steady_clock::now();
  const auto r = tleak_run({"--record", "runaway", "--max-live", "64MiB"}, {wrapper});
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(30));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(report_["run"]["program"]["stopped_by"], "max-live");
  EXPECT_EQ(report_["run"]["program"]["exit_signal"], SIGKILL);  // the command's
  EXPECT_GT(report_["totals"]["peak_live_bytes"].get<std::int64_t>(), 64 << 20);
  EXPECT_LT(report_["totals"]["peak_live_bytes"].get<std::int64_t>(), 128 << 20);
}

// A check of a command can name the program it is about; its baseline is another than the
// command's own.
TEST_F(RecordRun, ACheckNamesTheProgramOfItsCommand) {
  const std::string wrapper = shell_script("train.sh", program("exit_reachability") + "\necho after\n");
  const std::string checks = path("checks.json");
  Json j = {{"schema", "tleak.checks/1"},
            {"checks",
             {{{"command", {wrapper}}, {"record", "exit_reachability"}, {"expect", {{"max_leaked_bytes", 3500}}}},
              {{"command", {wrapper}}, {"record", "exit_reachability"}, {"expect", {{"max_leaked_bytes", 3499}}}},
              {{"command", {wrapper}}, {"expect", {{"max_leaked_bytes", 0}}}}}}};
  std::ofstream(checks) << j.dump();
  const auto r = run_process(TLEAK_BINARY, {"check", "--checks", checks});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const std::string name = "command " + wrapper + " (record exit_reachability)";
  EXPECT_NE(r.out.find("PASS  " + name), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("FAIL  " + name + ": leaked 3500 bytes, limit 3499"), std::string::npos) << r.out;
  // The shell alone is judged as it leaves by _exit (dash does): it lost nothing.
  EXPECT_NE(r.out.find("PASS  command " + wrapper + ": bounded: peak "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 passed, 1 failed"), std::string::npos) << r.out;
  // "record" belongs to a command, and is a file name.
  for (const Json& bad : {Json{{"scenario", "append-loop"}, {"record", "python3"}},
                          Json{{"command", {wrapper}}, {"record", "/usr/bin/python3"}},
                          Json{{"command", {wrapper}}, {"record", 3}}}) {
    std::ofstream(checks) << Json{{"schema", "tleak.checks/1"}, {"checks", {bad}}}.dump();
    const auto refused = run_process(TLEAK_BINARY, {"check", "--checks", checks});
    EXPECT_EQ(refused.exit_code, 2) << bad;
    EXPECT_NE(refused.err.find("\"record\""), std::string::npos) << refused.err;
  }
}

TEST_F(RecordRun, ANameNoProcessRanOrThatIsNoFileNameIsRefused) {
  const std::string wrapper = shell_script("plain.sh", "/bin/true\n");
  expect_refused(tleak_run({"--record", "no-such-program"}, {wrapper}),
                 "no process '" + wrapper + "' started that tleak could record ran 'no-such-program' (it ran dash, true; "
                 "the command ended with exit status 0)");
  // A script that failed before it reached the program: its status says so.
  const std::string failing = shell_script("failing.sh", "/bin/true\nexit 4\n");
  expect_refused(tleak_run({"--record", "python3"}, {failing}), "(it ran dash, true; the command ended with exit status 4)");
  expect_refused(tleak_run({"--record", "/usr/bin/true"}, {wrapper}), "--record takes a program's file name");
  expect_refused(tleak_run({"--record", ""}, {wrapper}), "--record: give a program's file name");
  expect_refused(tleak_run({"--record", std::string(300, 'x')}, {wrapper}), "of at most 255 bytes");
}

// A forked copy's exit scan reads the memory it shares with its parent without making it its own
// (tests/programs/forked_copy_shares.c, 128 MiB inherited): process_vm_readv, which pins what it
// reads, had the kernel copy every shared page first (the copy's private memory peaked at 128 MiB
// and more); /proc/self/mem leaves them shared.
TEST_F(RecordRun, AForkedCopysScanLeavesWhatItSharesShared) {
  const auto r = tleak_run({"--record-fork"}, {program("forked_copy_shares")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(copy exited 0, its private memory peaked at (\d+) MiB)"))) << r.out;
  EXPECT_LT(std::stol(m[1]), 32) << r.out;
  EXPECT_TRUE(report_["run"]["program"]["forked_copy"]);
  EXPECT_TRUE(report_["run"]["program"]["exit_scan"]);
  EXPECT_GE(report_["run"]["program"]["exit_scan_root_bytes"].get<std::int64_t>(), std::int64_t{128} << 20);
  EXPECT_EQ(site_at(at("forked_copy_shares.c", "COPY"))["reachable_at_exit_bytes"], 100);
  EXPECT_EQ(report_["totals"]["leaked_bytes"], 0);
}

// `tleak run --record-fork -- COMMAND`: the first copy the command's process forks that allocates
// (a worker) is recorded from that allocation on, not the command's own (tests/programs/forked_workers.c).
TEST_F(RecordRun, TheFirstForkedCopyThatAllocatesIsRecorded) {
  const auto r = tleak_run({"--record-fork"}, {program("forked_workers")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "workers done\n");  // the program's own output, untouched
  const Json& run = report_["run"]["program"];
  EXPECT_TRUE(run["forked_copy"]);
  EXPECT_TRUE(run["record"].is_null());
  EXPECT_EQ(run["exit_status"], 0);  // the command's
  EXPECT_TRUE(run["exit_scan"]);  // the worker exit()s
  EXPECT_EQ(run["clock"], "iterations");
  EXPECT_EQ(report_["run"]["iterations"], 40);  // one worker's marks, not the three's
  EXPECT_NE(r.err.find("tleak forked_workers (forked copy, pid " + std::to_string(run["pid"].get<std::int64_t>()) +
                       ", 40 iterations)\n"),
            std::string::npos)
      << r.err;
  // The worker's own work, exactly.
  const Json& keep = site_at(at("forked_workers.c", "WORKER_KEEP"));
  EXPECT_EQ(keep["verdict"], "growth");
  EXPECT_EQ(keep["allocations"], 40);
  EXPECT_NEAR(keep["growth"]["slope_bytes_per_iteration"].get<double>(), 1000.0, 1.0);
  EXPECT_EQ(keep["reachable_at_exit_bytes"], 40 * 1000);
  // At its exit: its lost block is the one leak; the block it hung on one it inherited is reachable
  // through that one, which tleak never saw as a block (its heap read as roots).
  EXPECT_EQ(site_at(at("forked_workers.c", "WORKER_LOST"))["leaked_bytes"], 123);
  EXPECT_EQ(site_at(at("forked_workers.c", "HUNG"))["reachable_at_exit_bytes"], 456);
  const Json& scratch = site_at(at("forked_workers.c", "WORKER_SCRATCH"));
  EXPECT_EQ(scratch["allocations"], 40);
  EXPECT_EQ(scratch["frees"], 40);
  // Nothing of the parent's, before the fork or after; the inherited block's free counts nowhere.
  for (const Json& s : report_["sites"]) {
    for (const char* parents : {"PARENT", "PARENT_AFTER"}) {
      EXPECT_NE(s["label"], "main (" + at("forked_workers.c", parents)) << s["label"];
    }
  }
  EXPECT_EQ(report_["totals"]["leaked_bytes"], 123);
  // Which process, and that the other two workers were not recorded; how its exit scan read it.
  const std::string recorded = record_note();
  EXPECT_EQ(recorded, "tleak recorded process " + std::to_string(run["pid"].get<std::int64_t>()) +
                          ", the first copy of the command's process that it forked and that allocated "
                          "(--record-fork), from its first allocation on; the command's own process was not "
                          "recorded, nor the command's other processes (forked_workers (forked, did not exec) x2)");
  const std::vector<std::string> all = notes();
  EXPECT_NE(std::find_if(all.begin(), all.end(),
                         [](const std::string& n) { return n.rfind("the process recorded is a copy the program forked, whose blocks from before", 0) == 0; }),
            all.end())
      << report_["notes"];
}

// Without it, the parent's report says how to record one of its copies.
TEST_F(RecordRun, WithoutRecordForkTheCommandsProcessIsRecordedAndTheCopiesNamed) {
  const auto r = tleak_run({}, {program("forked_workers")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(report_["run"]["program"]["forked_copy"]);
  EXPECT_EQ(site_at(at("forked_workers.c", "PARENT_AFTER"))["allocations"], 10);
  EXPECT_NE(report_["notes"].dump().find("(forked_workers (forked, did not exec) x3), which tleak does not record"),
            std::string::npos)
      << report_["notes"];
  EXPECT_NE(report_["notes"].dump().find("record the first of them that allocates (--record-fork)"), std::string::npos);
}

// A check of a command's forked copy: judged on that copy's report; "record_fork" belongs to a
// command, is a boolean, and names no other process than "record" does.
TEST_F(RecordRun, ACheckJudgesTheForkedCopy) {
  const std::string checks = path("checks.json");
  const Json command = {program("forked_workers")};
  Json j = {{"schema", "tleak.checks/1"},
            {"checks",
             {{{"command", command}, {"record_fork", true}, {"expect", {{"max_leaked_bytes", 123}}}},
              {{"command", command}, {"record_fork", true}, {"expect", {{"max_growth_bytes_per_iteration", 500}}}}}}};
  std::ofstream(checks) << j.dump();
  const auto r = run_process(TLEAK_BINARY, {"check", "--checks", checks});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const std::string name = "command " + program("forked_workers") + " (record its forked copy)";
  EXPECT_NE(r.out.find("PASS  " + name), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("FAIL  " + name + ": "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 passed, 1 failed"), std::string::npos) << r.out;
  for (const Json& bad : {Json{{"scenario", "append-loop"}, {"record_fork", true}},
                          Json{{"command", command}, {"record_fork", "yes"}}}) {
    std::ofstream(checks) << Json{{"schema", "tleak.checks/1"}, {"checks", {bad}}}.dump();
    const auto refused = run_process(TLEAK_BINARY, {"check", "--checks", checks});
    EXPECT_EQ(refused.exit_code, 2) << bad;
    EXPECT_NE(refused.err.find("\"record_fork\""), std::string::npos) << refused.err;
    EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << refused.err;
  }
}

// With --record NAME, the copies forked by a process that runs NAME, here started by a wrapper
// script that does not exec it: the first that allocates is recorded, as when tleak runs it itself.
TEST_F(RecordRun, AWorkerOfTheNamedProgramIsRecorded) {
  const std::string wrapper = shell_script("run.sh", program("forked_workers") + "\necho after\n");
  const auto r = tleak_run({"--record", "forked_workers", "--record-fork"}, {wrapper});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "workers done\nafter\n");
  EXPECT_TRUE(report_["run"]["program"]["forked_copy"]);
  EXPECT_EQ(report_["run"]["program"]["record"], "forked_workers");
  const Json& keep = site_at(at("forked_workers.c", "WORKER_KEEP"));
  EXPECT_EQ(keep["verdict"], "growth");
  EXPECT_EQ(keep["allocations"], 40);
  EXPECT_EQ(record_note().rfind("tleak recorded process " + std::to_string(report_["run"]["program"]["pid"].get<std::int64_t>()) +
                                    ", the first copy of a process running forked_workers that it forked and that "
                                    "allocated (--record-fork), from its first allocation on; the process that forked "
                                    "it was not recorded",
                                0),
            0u)
      << record_note();
}

// A command that forks no copy that allocates is refused once it ended, in one line.
TEST_F(RecordRun, RecordForkWithoutACopyIsRefused) {
  expect_refused(tleak_run({"--record-fork"}, {program("growth"), "leaky"}),
                 "ended with exit status 0 before any copy of its process that it forked allocated");
  const std::string wrapper = shell_script("plain.sh", program("growth") + " leaky\n");
  expect_refused(tleak_run({"--record", "growth", "--record-fork"}, {wrapper}),
                 "ended with exit status 0 before any copy of a process running growth that it forked allocated");
}

}  // namespace
}  // namespace tleak::program_tests
