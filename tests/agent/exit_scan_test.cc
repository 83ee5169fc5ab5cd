// What `tleak run` calls leaked: the blocks no root reaches as the program exits (data and bss,
// every thread's stack and registers), judged beside memcheck on the same programs.
#include "program_run.h"

namespace tleak::program_tests {

void ProgramRun::expect_exit_reachability_figures() const {
  EXPECT_EQ(report_["totals"]["leaked_bytes"], 3500);
  EXPECT_EQ(report_["totals"]["leaked_blocks"], 5);
  EXPECT_EQ(site_at(at("exit_reachability.c", "DIRECT"))["leaked_bytes"], 3000);
  EXPECT_EQ(site_at(at("exit_reachability.c", "PARENT"))["leaked_bytes"], 200);
  EXPECT_EQ(site_at(at("exit_reachability.c", "CHILD"))["leaked_bytes"], 300);
  const Json& global = site_at(at("exit_reachability.c", "GLOBAL"));
  EXPECT_EQ(global["verdict"], "bounded");
  EXPECT_EQ(global["reachable_at_exit_bytes"], 4096);
  EXPECT_EQ(site_at(at("exit_reachability.c", "THREAD"))["reachable_at_exit_bytes"], 2048);
  EXPECT_EQ(report_["summary"]["verdict"], "leak");
}

namespace {

TEST_F(ProgramRun, LeaksAreTheUnreachableBlocksAtExit) {
  const auto r = tleak_run({}, {program("exit_reachability")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_exit_reachability_figures();
}

// A program that leaves by _exit or _Exit (os._exit: how a DataLoader's or a pool's workers end) runs
// no exit handlers, no destructors: the agent scans before the C library's _exit, from the frame
// that called it, with its registers; from another thread, the main thread's waiting stack is read
// as any other thread's. memcheck judges such a process the same (before, no scan: every block
// unjudged).
// A SIGTERM sent as it leaves (multiprocessing's terminate()) finds the process inside _exit: the
// scan, which runs there, holds signals off and is not cut short. quick_exit, whose _exit the C
// library calls within itself, is judged after the program's at_quick_exit handlers.
TEST_F(ProgramRun, AProgramThatLeavesByExitCallIsJudged) {
  for (const std::string how : {"_exit", "_Exit", "thread", "terminated", "quick_exit"}) {
    const auto r = tleak_run({}, {program("exit_call"), how});
    EXPECT_EQ(r.exit_code, how == "_Exit" ? 3 : 0) << r.err;
    EXPECT_EQ(report_["run"]["program"]["exit_status"], how == "_Exit" ? 6 : 0) << how;
    EXPECT_TRUE(report_["run"]["program"]["exit_scan"]) << how;
    EXPECT_EQ(report_["totals"]["leaked_bytes"], 168) << how;
    EXPECT_EQ(report_["totals"]["leaked_blocks"], 2) << how;
    EXPECT_EQ(site_at(at("lost_node.h", "LOST"))["leaked_bytes"], 123) << how;
    EXPECT_EQ(site_at(at("lost_node.h", "CHILD"))["leaked_bytes"], 45) << how;
    // quick_exit: after the program's at_quick_exit handlers, one of which freed KEPT.
    EXPECT_EQ(site_at(at("exit_call.c", "KEPT"))["reachable_at_exit_bytes"], how == "quick_exit" ? 0 : 1000) << how;
    EXPECT_EQ(site_at(at("exit_call.c", "KEPT"))["frees"], how == "quick_exit" ? 1 : 0) << how;
    EXPECT_EQ(site_at(at("exit_call.c", "ON_STACK"))["reachable_at_exit_bytes"], 2000) << how;
    EXPECT_EQ(report_["totals"]["unjudged_at_exit_bytes"], 0) << how;
  }
  expect_memcheck_loses({program("exit_call"), "_exit"}, 168);
  expect_memcheck_loses({program("exit_call"), "thread"}, 168);
  expect_memcheck_loses({program("exit_call"), "quick_exit"}, 168);
}

// A program that ends itself with a signal once it has cleaned up (CPython after Ctrl-C; C programs
// that re-raise a signal they caught): the agent's kill and raise scan first when the signal ends the
// process in the call: its action the default one, which ends a process, and not blocked. A
// handled or blocked signal lets the program go on, and the scan waits for its exit (the block it
// loses after the signal counts; a scan at the signal would not have seen it). From a signal
// handler, which may have interrupted malloc, no scan, as at _exit: every block left is unjudged.
TEST_F(ProgramRun, AProgramThatEndsItselfWithASignalIsJudged) {
  for (const std::string how : {"kill", "raise", "handled", "blocked"}) {
    const bool goes_on = how == "handled" || how == "blocked";
    const auto r = tleak_run({}, {program("signal_exit"), how});
    EXPECT_EQ(r.exit_code, goes_on ? 0 : 3) << how << r.err;
    const Json& run = report_["run"]["program"];
    EXPECT_EQ(run["exit_signal"], goes_on ? Json() : Json(how == "raise" ? SIGINT : SIGTERM)) << how;
    EXPECT_TRUE(run["exit_scan"]) << how;
    EXPECT_EQ(report_["totals"]["unjudged_at_exit_bytes"], 0) << how;
    EXPECT_EQ(site_at(at("lost_node.h", "LOST"))["leaked_bytes"], 123) << how;
    EXPECT_EQ(site_at(at("lost_node.h", "CHILD"))["leaked_bytes"], 45) << how;
    if (goes_on) {
      // main returned: its frame, which held ON_STACK, is gone.
      EXPECT_EQ(report_["totals"]["leaked_bytes"], 2245) << how;
      EXPECT_EQ(site_at(at("signal_exit.c", "AFTER"))["leaked_bytes"], 77) << how;
      EXPECT_EQ(site_at(at("signal_exit.c", "KEPT"))["frees"], 1) << how;
    } else {
      EXPECT_EQ(report_["totals"]["leaked_bytes"], 168) << how;
      EXPECT_EQ(site_at(at("signal_exit.c", "KEPT"))["reachable_at_exit_bytes"], 1000) << how;
      EXPECT_EQ(site_at(at("signal_exit.c", "ON_STACK"))["reachable_at_exit_bytes"], 2000) << how;
    }
  }
  expect_memcheck_loses({program("signal_exit"), "kill"}, 168, 128 + SIGTERM);
  expect_memcheck_loses({program("signal_exit"), "raise"}, 168, 128 + SIGINT);
  expect_memcheck_loses({program("signal_exit"), "handled"}, 2245);
  expect_memcheck_loses({program("signal_exit"), "blocked"}, 2245);

  const auto r = tleak_run({}, {program("signal_exit"), "in_handler"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(report_["run"]["program"]["exit_signal"], SIGTERM);
  EXPECT_FALSE(report_["run"]["program"]["exit_scan"]);
  EXPECT_EQ(report_["totals"]["leaked_bytes"], 0);
  EXPECT_EQ(report_["totals"]["unjudged_at_exit_bytes"], 3168);
  expect_one_note_starting("no exit scan: the program was killed by signal 15 (SIGTERM) before its exit handlers ran "
                           "(one it sent itself from a signal handler");
}

// A program killed from outside by a signal it leaves to the default action (Ctrl-C, kill, timeout,
// a reader that went away) is judged as memcheck judges it: the agent's handler stands in for the
// default action, scans the process as the signal found it (the interrupted frame up, every
// register a root), then lets the signal end it. One that lands inside the agent ("busy": malloc
// and free in a loop) is acted on as the thread leaves it, the block on its way to the program a
// root. A signal sent twice does not cut the scan short. The scan runs on a stack of the agent's
// own: "deep" is signalled with 6 KiB of its thread's stack left, where the scan's frames overflowed
// it (killed by SIGSEGV, in a build that scanned on the program's stack). Before, every block
// unjudged.
TEST_F(ProgramRun, AProgramKilledFromOutsideIsJudged) {
  const std::map<std::string, int> signals = {
      {"waiting", SIGTERM}, {"busy", SIGINT}, {"twice", SIGTERM}, {"pipe", SIGPIPE}, {"deep", SIGTERM}};
  for (const auto& [how, signal] : signals) {
    for (int round = 0; round < (how == "busy" ? 5 : 1); ++round) {
      const auto r = tleak_run({}, {program("outside_signal"), how});
      EXPECT_EQ(r.exit_code, 3) << how << r.err;
      EXPECT_NE(r.err.find("tleak: the program was killed by signal " + std::to_string(signal) + " (SIG" +
                           sigabbrev_np(signal) + "); report written"),
                std::string::npos)
          << r.err;
      const Json& run = report_["run"]["program"];
      EXPECT_EQ(run["exit_signal"], signal) << how;
      EXPECT_TRUE(run["exit_scan"]) << how;
      EXPECT_EQ(report_["totals"]["unjudged_at_exit_bytes"], 0) << how;
      EXPECT_EQ(report_["totals"]["leaked_bytes"], 168) << how;
      EXPECT_EQ(report_["totals"]["leaked_blocks"], 2) << how;
      EXPECT_EQ(site_at(at("lost_node.h", "LOST"))["leaked_bytes"], 123) << how;
      EXPECT_EQ(site_at(at("lost_node.h", "CHILD"))["leaked_bytes"], 45) << how;
      EXPECT_EQ(site_at(at("outside_signal.c", "KEPT"))["reachable_at_exit_bytes"], 1000) << how;
      EXPECT_EQ(site_at(at("outside_signal.c", "ON_STACK"))["reachable_at_exit_bytes"], 2000) << how;
    }
  }
  // Not "busy" under memcheck: its loop, serialized with the sending thread under Valgrind, runs for
  // seconds before the signal, which may find a block memcheck's own malloc has just made, lost.
  for (const auto& [how, signal] : signals) {
    if (how != "busy") expect_memcheck_loses({program("outside_signal"), how}, 168, 128 + signal);
  }
}

// A program that leaves from deep in a recursion, 6 KiB of its thread's stack left: the agent's walk
// and exit scan run on a stack of their own (exit_frame.h, on_own_stack_from_here), and the program
// leaves as it means to, judged; on its own stack they overflowed it (SIGSEGV, every block
// unjudged, by exit, _exit, kill and abort alike).
TEST_F(ProgramRun, AProgramThatLeavesWithLittleStackLeftIsJudged) {
  const std::map<std::string, int> endings = {{"exit", 0}, {"_exit", 0}, {"kill", 128 + SIGTERM}, {"abort", 128 + SIGABRT}};
  for (const auto& [how, status] : endings) {
    const auto r = tleak_run({}, {program("deep_leaving"), how});
    EXPECT_EQ(r.exit_code, status == 0 ? 0 : 3) << how << r.err;
    const Json& run = report_["run"]["program"];
    EXPECT_EQ(run["exit_signal"], status == 0 ? Json() : Json(status - 128)) << how;
    EXPECT_TRUE(run["exit_scan"]) << how;
    EXPECT_EQ(report_["totals"]["leaked_bytes"], 168) << how;
    EXPECT_EQ(report_["totals"]["unjudged_at_exit_bytes"], 0) << how;
    expect_memcheck_loses({program("deep_leaving"), how}, 168, status);
  }
}

// Standing in for the default action changes nothing the program can see: it reads SIG_DFL back
// through sigaction, signal, sysv_signal and sigset, its own SIG_IGN and handlers work as they
// would, and a child it forks that signals itself dies by the signal.
TEST_F(ProgramRun, StandingInForTheDefaultActionIsUnseen) {
  const std::string expected =
      "SIGINT SIG_DFL flags 0\n"
      "signal(SIGHUP, SIG_IGN) was SIG_DFL\n"
      "SIGHUP now SIG_IGN\n"
      "signal(SIGHUP, SIG_DFL) was SIG_IGN\n"
      "SIGTERM was SIG_DFL\n"
      "handled 1; SIGTERM was on_signal flags " + std::to_string(SA_RESTART) + ", now SIG_DFL\n"
      "sigset(SIGPIPE, SIG_HOLD) was SIG_DFL\n"
      "sigset(SIGPIPE, SIG_DFL) was SIG_HOLD\n"
      "sysv_signal(SIGINT, on_signal) was SIG_DFL\n"
      "signal(SIGINT, SIG_DFL) was on_signal\n"
      "child killed by 15\n";
  const auto r = tleak_run({}, {program("outside_signal"), "view"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, expected);
  const auto p = tleak::testing::run_process(program("outside_signal"), {"view"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_EQ(p.out, expected);
}

// abort() called by the program or a library of its (libstdc++'s std::terminate, after an uncaught
// exception: how a C++ program that fails ends) is judged as the signal it sends would be: before,
// killed by SIGABRT, every block unjudged. A SIGABRT handler that jumps back out (test frameworks
// do) lets the program go on: no scan at abort, its exit judged.
TEST_F(ProgramRun, AProgramThatAbortsIsJudged) {
  for (const std::string how : {"uncaught", "abort", "handled"}) {
    const bool goes_on = how == "handled";
    const auto r = tleak_run({}, {program("aborted"), how});
    EXPECT_EQ(r.exit_code, goes_on ? 0 : 3) << how << r.err;
    EXPECT_EQ(report_["run"]["program"]["exit_signal"], goes_on ? Json() : Json(SIGABRT)) << how;
    EXPECT_TRUE(report_["run"]["program"]["exit_scan"]) << how;
    EXPECT_EQ(report_["totals"]["unjudged_at_exit_bytes"], 0) << how;
    EXPECT_EQ(report_["totals"]["leaked_bytes"], goes_on ? 245 : 168) << how;
    EXPECT_EQ(site_at(at("lost_node.h", "LOST"))["leaked_bytes"], 123) << how;
    EXPECT_EQ(site_at(at("lost_node.h", "CHILD"))["leaked_bytes"], 45) << how;
    if (goes_on) {
      EXPECT_EQ(site_at(at("aborted.cc", "AFTER"))["leaked_bytes"], 77);
    }
  }
  expect_memcheck_loses({program("aborted"), "uncaught"}, 168, 128 + SIGABRT);
  expect_memcheck_loses({program("aborted"), "abort"}, 168, 128 + SIGABRT);
  expect_memcheck_loses({program("aborted"), "handled"}, 245);

  // The C library's own abort (a failed assert) never reaches the agent: unjudged, and the note says
  // why.
  const auto r = tleak_run({}, {program("aborted"), "assert"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_FALSE(report_["run"]["program"]["exit_scan"]);
  EXPECT_EQ(report_["totals"]["leaked_bytes"], 0);
  expect_one_note_starting("no exit scan: the program was killed by signal 6 (SIGABRT) before its exit handlers ran "
                           "(an abort() the C library called itself, as a failed assert() does");
}

// A thread blocked in a system call as the program exits may hold the only pointer to a block in
// a register (tests/programs/register_held.c): memcheck reads every thread's registers, and tleak,
// the program's parent, reads them through ptrace. The program sees nothing of it: its threads'
// calls go on waiting, those Linux ends with EINTR after a stop (epoll_wait, sigtimedwait, recv
// with a timeout) set to run again, and the thread in connect, which cannot run again, is left
// unread, as a note says.
TEST_F(ProgramRun, ABlockHeldOnlyInABlockedThreadsRegisterIsReachable) {
  const auto r = tleak_run({}, {program("register_held")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "exiting\n");
  EXPECT_TRUE(report_["run"]["program"]["exit_scan"]);
  EXPECT_EQ(report_["totals"]["leaked_bytes"], 700);
  EXPECT_EQ(report_["totals"]["leaked_blocks"], 1);
  EXPECT_EQ(site_at(at("register_held.c", "LOST"))["leaked_bytes"], 700);
  const Json& held = site_at(at("register_held.c", "HELD"));
  EXPECT_EQ(held["leaked_bytes"], 0);
  EXPECT_EQ(held["reachable_at_exit_bytes"], 1500);
  bool noted = false;
  for (const Json& note : report_["notes"]) {
    const auto text = note.get<std::string>();
    noted = noted || text == "the registers of 1 other thread were not read as the program exited (blocked in "
                             "connect, which a stop would end with EINTR): a block only such a register pointed to "
                             "counts as leaked";
  }
  EXPECT_TRUE(noted) << report_["notes"];
  const auto m = run_process(VALGRIND_PROGRAM, {"--leak-check=full", program("register_held")});
  ASSERT_EQ(m.exit_code, 0) << m.err;
  EXPECT_EQ(m.out, "exiting\n");
  EXPECT_EQ(memcheck_figure(m.err, "definitely lost") + memcheck_figure(m.err, "indirectly lost"), 700) << m.err;
  EXPECT_GE(memcheck_figure(m.err, "still reachable"), 1500) << m.err;
}

// The same program made non-dumpable and run by tleak as another user than root: tleak may not
// ptrace its threads. The exit scan still runs, the note says whose registers went unread and why,
// and the block only a register held reads lost (memcheck, which reads them, calls it reachable).
TEST_F(ProgramRun, ANonDumpableProgramsRegistersGoUnreadAndTheReportSaysSo) {
  if (geteuid() != 0) GTEST_SKIP() << "runs tleak as another user (nobody), which needs root";
  std::filesystem::permissions(dir_, std::filesystem::perms::all);
  const auto r = run_process("/usr/bin/setpriv", {"--reuid=65534", "--regid=65534", "--clear-groups", TLEAK_BINARY,
                                                   "run", "-o", path("report.json"), "--", program("register_held"),
                                                   "undumpable"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "exiting\n");
  report_ = Json::parse(std::ifstream(path("report.json")));
  EXPECT_TRUE(report_["run"]["program"]["exit_scan"]);
  EXPECT_EQ(site_at(at("register_held.c", "LOST"))["leaked_bytes"], 700);
  EXPECT_EQ(site_at(at("register_held.c", "HELD"))["leaked_bytes"], 1500);
  EXPECT_EQ(report_["totals"]["leaked_bytes"], 2200);
  bool noted = false;
  for (const Json& note : report_["notes"]) {
    const auto text = note.get<std::string>();
    // Every thread but the exiting one (the one in connect is left be anyway); the first reason
    // met is given, the held thread's, which was made first.
    noted = noted || text == "the registers of 9 other threads were not read as the program exited (ptrace: "
                             "Operation not permitted): a block only such a register pointed to counts as leaked";
  }
  EXPECT_TRUE(noted) << report_["notes"];
}

// Another thread's dead frames, below its stack pointer, hold copies of a lost block's address
// (tests/programs/stale_stack_words.c): read from its stack pointer up, as memcheck reads it, the
// stack keeps nothing reachable, and the block is a leak for both.
TEST_F(ProgramRun, AWaitingThreadsDeadFramesKeepNoBlockReachable) {
  for (int run = 0; run < 2; ++run) {
    const auto r = tleak_run({}, {program("stale_stack_words")});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "exiting\n");
    EXPECT_EQ(report_["totals"]["leaked_bytes"], 900) << run;
    EXPECT_EQ(site_at(at("dead_frames.h", "STALE"))["leaked_bytes"], 900) << run;
  }
  expect_memcheck_loses({program("stale_stack_words")}, 900);
}

// Threads that ended left their stacks to the C library, which keeps them for the next threads
// (tests/programs/ended_thread_stacks.c): their dead frames hold copies of lost blocks' addresses.
// Read from where each thread left off, as memcheck reads them, they keep nothing reachable. A
// thread started on such a stack is read from its own stack pointer (its local keeps its block
// reachable), and a thread never joined keeps its result reachable through its descriptor.
TEST_F(ProgramRun, AnEndedThreadsStackKeepsNoBlockReachable) {
  for (int run = 0; run < 2; ++run) {
    const auto r = tleak_run({}, {program("ended_thread_stacks"), "joined"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "exiting\n");
    EXPECT_EQ(site_at(at("dead_frames.h", "STALE"))["leaked_bytes"], 2700) << run;
    EXPECT_EQ(report_["totals"]["leaked_bytes"], 2700) << run;
  }
  const auto r = tleak_run({}, {program("ended_thread_stacks"), "reused"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(site_at(at("dead_frames.h", "STALE"))["leaked_bytes"], 900);
  EXPECT_EQ(site_at(at("ended_thread_stacks.c", "HELD"))["reachable_at_exit_bytes"], 1200);
  EXPECT_EQ(site_at(at("ended_thread_stacks.c", "RESULT"))["reachable_at_exit_bytes"], 1500);
  EXPECT_EQ(report_["totals"]["leaked_bytes"], 900);
  expect_memcheck_loses({program("ended_thread_stacks"), "joined"}, 2700);
  expect_memcheck_loses({program("ended_thread_stacks"), "reused"}, 900);
}

// A worker's own malloc heap (a glibc arena), left with no block in use as it ended, still holds
// in a freed table the address of a block the program then lost (tests/programs/emptied_arena.c):
// a heap is no root, and the block is a leak, as memcheck says.
TEST_F(ProgramRun, AnEmptiedThreadHeapKeepsNoBlockReachable) {
  const auto r = tleak_run({}, {program("emptied_arena")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "exiting\n");
  EXPECT_EQ(site_at(at("emptied_arena.c", "LOST"))["leaked_bytes"], 3000);
  EXPECT_EQ(report_["totals"]["leaked_bytes"], 3000);
  expect_memcheck_loses({program("emptied_arena")}, 3000);
}

// Blocks whose only pointers lie in shared memory the program mapped (tests/programs/shared_roots.c:
// an anonymous shared mapping, a memory file, a POSIX object, a System V segment) are reachable, as
// memcheck reads them; only the lost block is a leak.
TEST_F(ProgramRun, SharedMemoryKeepsItsBlocksReachable) {
  const auto r = tleak_run({}, {program("shared_roots")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "shared\n");
  for (const char* kind : {"ANON", "MEMFD", "SHM", "SYSV"}) {
    const Json& kept = site_at(at("shared_roots.c", kind));
    EXPECT_EQ(kept["reachable_at_exit_bytes"], 1000) << kind;
    EXPECT_EQ(kept["leaked_bytes"], 0) << kind;
  }
  EXPECT_EQ(site_at(at("shared_roots.c", "LOST"))["leaked_bytes"], 555);
  EXPECT_EQ(report_["totals"]["leaked_bytes"], 555);
  expect_memcheck_loses({program("shared_roots")}, 555);
}

// More blocks live at exit than the exit scan's answer holds bits for in one message: the answer
// comes in pieces, and the blocks judged by a later piece (the lost ones, highest in the heap) are
// judged by their own bits.
TEST_F(ProgramRun, AnExitScansAnswerInPiecesJudgesEveryBlock) {
  const auto r = tleak_run({}, {program("many_blocks_at_exit")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(report_["run"]["program"]["exit_scan"]);
  EXPECT_EQ(report_["totals"]["leaked_bytes"], 40000);
  EXPECT_EQ(report_["totals"]["leaked_blocks"], 1000);
  EXPECT_EQ(site_at(at("many_blocks_at_exit.c", "LOST"))["leaked_bytes"], 40000);
  const Json& kept = site_at(at("many_blocks_at_exit.c", "KEPT"));
  EXPECT_EQ(kept["reachable_at_exit_bytes"], 600000 * 16);
  EXPECT_EQ(kept["leaked_bytes"], 0);
  EXPECT_EQ(site_at(at("many_blocks_at_exit.c", "ARRAY"))["reachable_at_exit_bytes"], 600000 * 8);
  expect_memcheck_loses({program("many_blocks_at_exit")}, 40000);
}

// A thread that allocates and frees as the program exits, while the exit scan reads the heap: the
// blocks it frees meanwhile are no leaks, those it allocates after the scan's list are unjudged (a
// note says so), and the program's own leak is judged still. (Before, such a thread's records made
// the scan thrown away, under a note that the program had not run its exit handlers, or the
// blocks it freed meanwhile read as leaks.) Three runs: the thread races the scan differently
// each time.
TEST_F(ProgramRun, AThreadBusyAsTheProgramExitsLeavesTheExitScanExact) {
  for (int run = 0; run < 3; ++run) {
    const auto r = tleak_run({}, {program("busy_thread_at_exit")});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(report_["run"]["program"]["exit_scan"]) << run;
    EXPECT_EQ(report_["totals"]["leaked_bytes"], 1000) << run;
    EXPECT_EQ(report_["totals"]["leaked_blocks"], 1) << run;
    EXPECT_EQ(site_at(at("busy_thread_at_exit.c", "LOST"))["leaked_bytes"], 1000) << run;
    const std::int64_t unjudged = report_["totals"]["unjudged_at_exit_blocks"].get<std::int64_t>();
    EXPECT_LE(unjudged, 3) << run;  // at most the thread's three, all allocated after the list
    bool noted = false;
    for (const Json& note : report_["notes"]) {
      noted = noted || note.get<std::string>().find("still running as the program exited") != std::string::npos;
      EXPECT_EQ(note.get<std::string>().find("no exit scan"), std::string::npos) << note;
    }
    EXPECT_EQ(noted, unjudged > 0) << run;
  }
  // Memcheck judges the heap once every thread is gone: the same loss.
  expect_memcheck_loses({program("busy_thread_at_exit")}, 1000);
}

// A thread that keeps moving the only pointer to a block between a global and a block it has just
// allocated, as the program exits: the block is reachable whenever the scan reads it, since tleak
// holds the other threads stopped while the scan runs and the scan reads what they allocated after
// its list (before, most runs called the block lost). Ten runs: the thread is stopped at another
// point of its loop each time.
TEST_F(ProgramRun, APointerMovedIntoANewBlockAsTheProgramExitsStaysReachable) {
  for (int run = 0; run < 10; ++run) {
    const auto r = tleak_run({}, {program("pointer_moving_at_exit")});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(report_["run"]["program"]["exit_scan"]) << run;
    EXPECT_EQ(report_["totals"]["leaked_bytes"], 1000) << run;
    EXPECT_EQ(site_at(at("pointer_moving_at_exit.c", "LOST"))["leaked_bytes"], 1000) << run;
    const Json& kept = site_at(at("pointer_moving_at_exit.c", "KEPT"));
    EXPECT_EQ(kept["leaked_bytes"], 0) << run;
    EXPECT_EQ(kept["reachable_at_exit_bytes"], 4096) << run;
  }
  // Memcheck judges the heap with every thread where it ended: the same loss.
  expect_memcheck_loses({program("pointer_moving_at_exit")}, 1000);
}

// With another malloc preloaded (jemalloc), its own memory (free space, bookkeeping) holds the
// addresses of blocks the program let go of: read as roots, it made every leak reachable. It is
// left out as glibc's heap is, and the figures are the same to the byte.
TEST_F(ProgramRun, UnderAPreloadedMallocLeaksAreStillTheUnreachableBlocks) {
  SKIP_WITHOUT_JEMALLOC();
  const auto r = tleak_run({}, {program("exit_reachability")}, {"LD_PRELOAD=" + kJemalloc});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_exit_reachability_figures();
  // A Python program: the 50 buffers it drops through ctypes (slack as in the test without it).
  const std::string script = std::string(TLEAK_SOURCE_DIR) + "/tests/programs/torch/ctypes_buffer.py";
  ASSERT_EQ(tleak_run({}, {TLEAK_PYTHON, script, "leaky"}, {"LD_PRELOAD=" + kJemalloc}).exit_code, 0);
  EXPECT_EQ(report_["summary"]["verdict"], "leak");
  EXPECT_GE(report_["sites"][0]["leaked_bytes"].get<std::int64_t>(), 48 * 4096);
  EXPECT_EQ(report_["sites"][0]["leaked_bytes"].get<std::int64_t>() +
                report_["sites"][0]["reachable_at_exit_bytes"].get<std::int64_t>(),
            50 * 4096);
}

// However many thread buffers the agent holds, none is read as a root: a block lost by the last of
// 1,200 threads (its allocation's record still in that thread's buffer) is a leak.
TEST_F(ProgramRun, TheAgentsOwnMemoryIsNeverARootHoweverManyThreads) {
  const auto r = tleak_run({"--max-sites", "10000000"}, {program("many_threads_leak")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "many threads done\n");
  EXPECT_TRUE(report_["run"]["program"]["exit_scan"]);
  EXPECT_EQ(report_["totals"]["leaked_bytes"], 777);
  EXPECT_EQ(report_["totals"]["leaked_blocks"], 1);
  EXPECT_EQ(site_at(at("many_threads_leak.c", "LOST"))["leaked_bytes"], 777);
  const Json& each = site_at(at("many_threads_leak.c", "EACH"));
  EXPECT_EQ(each["allocations"], 1200);
  EXPECT_EQ(each["frees"], 1200);
}

TEST_F(ProgramRun, LeakedBytesEqualMemchecksDefinitelyAndIndirectlyLost) {
  const auto r = tleak_run({}, {program("exit_reachability")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto m = run_process(VALGRIND_PROGRAM, {"--leak-check=full", program("exit_reachability")});
  ASSERT_EQ(m.exit_code, 0) << m.err;
  const std::int64_t definitely = memcheck_figure(m.err, "definitely lost");
  const std::int64_t indirectly = memcheck_figure(m.err, "indirectly lost");
  ASSERT_GE(definitely, 0) << m.err;
  ASSERT_GE(indirectly, 0) << m.err;
  EXPECT_EQ(report_["totals"]["leaked_bytes"].get<std::int64_t>(), definitely + indirectly) << m.err;
}

// The main thread ended first and another thread called exit: the scan reads the roots through
// that thread's view of the process (the main thread's reads empty), and agrees with memcheck.
TEST_F(ProgramRun, TheExitScanWorksWhenTheMainThreadEndedFirst) {
  const auto r = tleak_run({}, {program("main_exits_first")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "worker exits the process\n");
  EXPECT_TRUE(report_["run"]["program"]["exit_scan"]);
  EXPECT_EQ(site_at(at("main_exits_first.c", "LOST"))["leaked_bytes"], 1000);
  EXPECT_EQ(site_at(at("main_exits_first.c", "KEPT"))["reachable_at_exit_bytes"], 2000);
  expect_memcheck_loses({program("main_exits_first")}, 1000);
  EXPECT_EQ(report_["totals"]["leaked_bytes"], 1000);
}

// The same under jemalloc, whose blocks have no headers: a block's address is also its slab's,
// and the ended main thread's stale frames had held it: the lost block read reachable in 3 of 10
// and 17 of 20 runs (two series by hand). Ten runs, each exact.
TEST_F(ProgramRun, TheEndedMainThreadsStaleFramesKeepNothingReachable) {
  SKIP_WITHOUT_JEMALLOC();
  for (int run = 0; run < 10; ++run) {
    const auto r = tleak_run({}, {program("main_exits_first")}, {"LD_PRELOAD=" + kJemalloc});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "worker exits the process\n");
    EXPECT_EQ(site_at(at("main_exits_first.c", "LOST"))["leaked_bytes"], 1000) << "run " << run;
    EXPECT_EQ(site_at(at("main_exits_first.c", "KEPT"))["reachable_at_exit_bytes"], 2000) << "run " << run;
    EXPECT_EQ(report_["totals"]["leaked_bytes"], 1000) << "run " << run;
  }
}

// A lost block beside glibc's top chunk: the malloc's state points at that chunk's header, inside
// the block's last bytes. Read as a pointer, it had kept the block "reachable at exit".
TEST_F(ProgramRun, TheMallocsOwnPointerToTheNextChunkKeepsNothingReachable) {
  const auto r = tleak_run({}, {program("lost_beside_top")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "losing 1000 bytes\n");
  const Json& lost = site_at(at("lost_beside_top.c", "LOST"));
  EXPECT_EQ(lost["leaked_bytes"], 1000);
  EXPECT_EQ(lost["reachable_at_exit_bytes"], 0);
  expect_memcheck_loses({program("lost_beside_top")}, 1000);
  EXPECT_EQ(report_["totals"]["leaked_bytes"], 1000);
}

// A program nobody here wrote: Debian's perl, which leaves its interpreter's memory to the exit
// and loses some of it (its global destruction is skipped by default). tleak's exit scan finds
// the same lost blocks as memcheck, bytes and count, though perl's %ENV is larger under tleak.
TEST_F(ProgramRun, PerlsLossesAtExitAreMemchecks) {
  const std::vector<std::string> command = {"/usr/bin/perl", "-e",
                                            "my %h = map { $_ => [$_] } 1..1000; print scalar(keys %h), \"\\n\""};
  const auto r = tleak_run({}, command);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1000\n");
  EXPECT_TRUE(report_["run"]["program"]["exit_scan"]);
  std::vector<std::string> under_memcheck = {"--leak-check=full"};
  under_memcheck.insert(under_memcheck.end(), command.begin(), command.end());
  const auto m = run_process(VALGRIND_PROGRAM, under_memcheck);
  ASSERT_EQ(m.exit_code, 0) << m.err;
  const std::int64_t lost = memcheck_figure(m.err, "definitely lost") + memcheck_figure(m.err, "indirectly lost");
  EXPECT_GT(lost, 0) << m.err;  // perl 5.36 loses about 80 KB here: what is compared is not nothing
  EXPECT_EQ(report_["totals"]["leaked_bytes"], lost) << m.err;
  EXPECT_EQ(report_["totals"]["leaked_blocks"],
            memcheck_blocks(m.err, "definitely lost") + memcheck_blocks(m.err, "indirectly lost"))
      << m.err;
}

// A failed lookup's message, still held by glibc at exit, is reachable (memcheck: not lost). The
// agent's exit scan had looked up munmap at its first call (dlsym), and glibc freed the program's
// pending message there, out of the agent's sight: the message read as a leak.
TEST_F(ProgramRun, APendingDlerrorMessageIsNotALeak) {
  const auto plain = run_process(program("pending_dlerror"), {});
  ASSERT_EQ(plain.out, "found: no, dlerror: set\nlost 100 bytes\n");
  const auto r = tleak_run({}, {program("pending_dlerror")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, plain.out);
  EXPECT_EQ(report_["totals"]["leaked_bytes"], 100);
  EXPECT_EQ(report_["totals"]["leaked_blocks"], 1);
  EXPECT_EQ(site_at(at("pending_dlerror.c", "LOST"))["leaked_bytes"], 100);
  expect_memcheck_loses({program("pending_dlerror")}, 100);
}

// An address kept as data (instructions, bytes, text) is no reference: the interpreter's static
// data is full of such words, which on a non-PIE python3 (heap at low addresses) read as heap
// addresses, and the exit scan skips them. Kept in each form, every buffer is still a leak (read as
// references, all 50 would be reachable), but for the two blocks of slack the test above keeps for
// stale words in live blocks: with one, it failed once in a fresh clone's ASan suite (48 leaked).
TEST_F(ProgramRun, AnAddressKeptAsDataDoesNotKeepItsBlock) {
  const std::string script = std::string(TLEAK_SOURCE_DIR) + "/tests/programs/torch/ctypes_buffer.py";
  ASSERT_EQ(tleak_run({}, {"/usr/bin/env", "PYTHONMALLOC=malloc", TLEAK_PYTHON, script, "as-data"}).exit_code, 0);
  EXPECT_EQ(report_["summary"]["verdict"], "leak");
  const Json& buffers = report_["sites"][0];
  EXPECT_EQ(buffers["label"], "ctypes_buffer.py:" + std::to_string(line_of("torch/ctypes_buffer.py", "BUFFER")) + " in <module>");
  EXPECT_GE(buffers["leaked_bytes"].get<std::int64_t>(), 48 * 4096);
  EXPECT_EQ(buffers["leaked_bytes"].get<std::int64_t>() + buffers["reachable_at_exit_bytes"].get<std::int64_t>(), 50 * 4096);
}

// A program that leaves its address space full as it exits (it set a limit, as `ulimit -v` would)
// leaves the exit scan no room for its work: tleak then judges no block and says why. (The scan had
// gone on without its map of the process, read no root, and called every block lost: here the kept
// block and stdout's buffer too.) With no room at all the scan cannot take the live list it is
// sent; with 4 MiB it can, but not its map of the process; with 64 MiB it is made, and judges as
// memcheck would.
TEST_F(ProgramRun, AnExitScanWithoutRoomJudgesNothingAndSaysWhy) {
  for (const char* room : {"0", "4"}) {
    const auto r = tleak_run({}, {program("address_space_full"), room});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "limited\n");
    EXPECT_FALSE(report_["run"]["program"]["exit_scan"]) << room;
    EXPECT_EQ(report_["totals"]["leaked_bytes"], 0) << room;
    EXPECT_EQ(report_["totals"]["unjudged_at_exit_bytes"], report_["totals"]["peak_live_bytes"]) << room;
    EXPECT_GE(report_["totals"]["unjudged_at_exit_bytes"].get<std::int64_t>(), 5096) << room;
    EXPECT_EQ(report_["summary"]["verdict"], "bounded") << room;
    EXPECT_NE(report_["summary"]["sentence"].get<std::string>().find("leaks not judged (no exit scan)"), std::string::npos)
        << report_["summary"];
    std::vector<std::string> notes;
    for (const Json& note : report_["notes"]) notes.push_back(note.get<std::string>());
    EXPECT_NE(std::find(notes.begin(), notes.end(),
                        "the program's exit scan could not be made: its address space had no room left for the scan's "
                        "work (a limit such as `ulimit -v`, reached by the program), so blocks left allocated are "
                        "reported as unjudged, not as leaks"),
              notes.end())
        << report_["notes"];
  }
  const auto r = tleak_run({}, {program("address_space_full"), "64"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(report_["run"]["program"]["exit_scan"]);
  EXPECT_EQ(report_["totals"]["leaked_bytes"], 1000);
  EXPECT_EQ(site_at(at("address_space_full.c", "LOST"))["leaked_bytes"], 1000);
  EXPECT_EQ(site_at(at("address_space_full.c", "KEPT"))["reachable_at_exit_bytes"], 4096);
  expect_memcheck_loses({program("address_space_full"), "64"}, 1000);
}

// A gate on leaks does not pass a run whose leaks were not looked for: `run --fail-on leak` exits 1
// and says why, and a check asking for no leak or a bounded verdict fails. A gate on growth alone is
// not theirs to fail.
// A program killed, or that leaves by the exit system call itself, sends nothing more: its threads'
// last records were in the message slots it shared with tleak, and are read from there (before, a
// program killed holding a thousand blocks read as holding none). Every block it held is counted,
// unjudged.
TEST_F(ProgramRun, AProgramThatEndsWithoutSendingLeavesItsRecordsInTheSlots) {
  for (const std::string how : {"kill", "exit_group"}) {
    const auto r = tleak_run({}, {program("killed_holding"), how});
    EXPECT_EQ(r.exit_code, how == "kill" ? 3 : 0) << r.err;  // killed: the program failed; exit_group(0) did not
    std::int64_t held_bytes = 0, held_blocks = 0;
    const std::string held = at("killed_holding.c", "HELD");
    for (const Json& site : report_["sites"]) {
      const std::string label = site["label"];
      if (label.size() < held.size() || label.compare(label.size() - held.size(), held.size(), held) != 0) continue;
      held_bytes += site["unjudged_at_exit_bytes"].get<std::int64_t>();
      held_blocks += site["unjudged_at_exit_blocks"].get<std::int64_t>();
      EXPECT_EQ(site["allocations"].get<std::int64_t>(), site["unjudged_at_exit_blocks"].get<std::int64_t>()) << label;
    }
    EXPECT_EQ(held_bytes, 100000) << how;
    EXPECT_EQ(held_blocks, 1000) << how;
    EXPECT_FALSE(report_["run"]["program"]["exit_scan"]) << how;
    EXPECT_EQ(report_["totals"]["leaked_bytes"], 0) << how;
    EXPECT_GE(report_["totals"]["peak_live_bytes"].get<std::int64_t>(), 100000) << how;
  }
}

TEST_F(ProgramRun, AGateOnLeaksDoesNotPassARunWithoutAnExitScan) {
  const auto leak = tleak_run({"--fail-on", "leak"}, {program("address_space_full")});
  EXPECT_EQ(leak.exit_code, 1) << leak.err;
  EXPECT_NE(leak.err.find("tleak: --fail-on leak: leaks were not judged (no exit scan; the report's notes say why)"),
            std::string::npos)
      << leak.err;
  // (A gate on anything fails this run on its growth first, not assessed in no sample: it says so.)
  EXPECT_EQ(tleak_run({"--fail-on", "any"}, {program("address_space_full")}).exit_code, 1);
  const auto retained = tleak_run({"--fail-on", "retained"}, {program("address_space_full")});
  EXPECT_EQ(retained.exit_code, 0) << retained.err;
  const std::string checks = path("checks.json");
  Json j = {{"schema", "tleak.checks/1"},
            {"checks",
             {{{"command", {program("address_space_full")}}, {"expect", {{"max_leaked_bytes", 0}}}},
              {{"command", {program("address_space_full")}}, {"expect", {{"verdict", "bounded"}}}},
              {{"command", {program("address_space_full"), "64"}}, {"expect", {{"max_leaked_bytes", 1000}}}}}}};
  std::ofstream(checks) << j.dump();
  const auto r = run_process(TLEAK_BINARY, {"check", "--checks", checks});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("FAIL  command " + program("address_space_full") +
                       ": leaks were not judged (no exit scan; the report's notes say why)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("1 passed, 2 failed"), std::string::npos) << r.out;

  // Nor does a diff against such a run: the leak judged in A is not fixed in B, only not looked for.
  ASSERT_EQ(tleak_run({}, {program("address_space_full"), "64"}).exit_code, 0);
  std::filesystem::rename(path("report.json"), path("scanned.json"));
  ASSERT_EQ(tleak_run({}, {program("address_space_full")}).exit_code, 0);
  const auto diff = run_process(TLEAK_BINARY, {"diff", path("scanned.json"), path("report.json"), "--fail-on", "leak"});
  EXPECT_EQ(diff.exit_code, 1) << diff.out << diff.err;
  EXPECT_NE(diff.out.find("  leaked: 1000 B -> not judged (no exit scan: the report's notes say why)"), std::string::npos)
      << diff.out;
  EXPECT_EQ(diff.out.find("improvement"), std::string::npos) << diff.out;
  EXPECT_NE(diff.err.find("B's leaks were not judged"), std::string::npos) << diff.err;
  const auto json = run_process(TLEAK_BINARY, {"diff", path("scanned.json"), path("report.json"), "--format", "json"});
  EXPECT_EQ(Json::parse(json.out)["totals"]["leaks_judged"], (Json{{"a", true}, {"b", false}})) << json.out;
}

// Likewise a program that exits with every descriptor it may open taken (the scan cannot read the
// process's memory map, where its roots are listed), and one whose seccomp filter refuses the
// scan's reads (it had read no root, and called the kept block and stdout's buffer leaked).
TEST_F(ProgramRun, AnExitScanThatCannotReadItsRootsJudgesNothingAndSaysWhy) {
  const std::pair<const char*, const char*> cases[] = {
      {"descriptors", "its memory map (/proc/self/maps), which lists its roots, could not be read"},
      {"seccomp",
       "the kernel refused it the reads of the process's memory (process_vm_readv: a seccomp filter, as a sandbox sets)"}};
  for (const auto& [name, cause] : cases) {
    const auto r = tleak_run({}, {program("roots_unreadable"), name});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "exiting\n") << name;
    EXPECT_FALSE(report_["run"]["program"]["exit_scan"]) << name;
    EXPECT_EQ(report_["totals"]["leaked_bytes"], 0) << name;
    EXPECT_GE(report_["totals"]["unjudged_at_exit_bytes"].get<std::int64_t>(), 5000) << name;
    std::vector<std::string> notes;
    for (const Json& note : report_["notes"]) notes.push_back(note.get<std::string>());
    EXPECT_NE(std::find(notes.begin(), notes.end(),
                        std::string("the program's exit scan could not be made: ") + cause +
                            ", so blocks left allocated are reported as unjudged, not as leaks"),
              notes.end())
        << report_["notes"];
  }
}

}  // namespace
}  // namespace tleak::program_tests
