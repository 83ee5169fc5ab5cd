// The agent never changes what the program does: its output, exit status, standard error, signals,
// descriptors, forks, execs, small stacks and failing allocations stay its own; tleak itself is
// clean under memcheck; and what cannot run is refused in one line.
#include "program_run.h"

namespace tleak::program_tests {

namespace {

// A program run with another malloc preloaded, as servers often are (jemalloc): the agent comes
// first in LD_PRELOAD, so it sees every call, and hands each on to the user's malloc, which still
// serves every block (the program says so from jemalloc's own statistics, with and without tleak).
TEST_F(ProgramRun, AMallocTheUserPreloadsStillServesTheProgramAndTleakSeesIt) {
  SKIP_WITHOUT_JEMALLOC();
  const auto plain = run_process("/usr/bin/env", {"LD_PRELOAD=" + kJemalloc, program("preloaded_allocator"), "leaky"});
  ASSERT_EQ(plain.out, "allocator: jemalloc served the program's malloc\n");
  const auto r = tleak_run({}, {program("preloaded_allocator"), "leaky"}, {"LD_PRELOAD=" + kJemalloc});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, plain.out);
  EXPECT_EQ(report_["summary"]["verdict"], "growth");
  const Json& keep = site_at(at("preloaded_allocator.c", "KEEP"));
  EXPECT_EQ(keep["verdict"], "growth");
  EXPECT_NEAR(keep["growth"]["slope_bytes_per_iteration"].get<double>(), 4096.0, 1.0);
  EXPECT_EQ(keep["allocations"], 30);
  EXPECT_EQ(site_at(at("preloaded_allocator.c", "BIG"))["peak_live_bytes"], 1 << 20);
}

// With the report in a file and nothing of tleak's on standard error (--format json puts the
// report on standard output), the program's standard error is its own, byte for byte, through its
// exit scan (a line the agent's scan once wrote there while being debugged went unseen by the tests
// that read standard output only).
TEST_F(ProgramRun, TheProgramsStandardErrorIsItsOwn) {
  for (const char* name : {"exit_reachability", "register_held", "stale_stack_words", "threads"}) {
    const auto plain = run_process(program(name), {});
    ASSERT_EQ(plain.exit_code, 0) << name << plain.err;
    const auto r = tleak_run({"--format", "json"}, {program(name)});
    ASSERT_EQ(r.exit_code, 0) << name << r.err;
    EXPECT_EQ(r.err, plain.err) << name;
    EXPECT_EQ(r.out.substr(0, plain.out.size()), plain.out) << name;
  }
}

// A program that closes every descriptor (close, close_range, closefrom) and puts its own on the
// agent's numbers (dup2, dup3) keeps its output, and tleak keeps its channel: the leak after that is
// found by the exit scan.
TEST_F(ProgramRun, ClosingEveryDescriptorKeepsTheAgentsChannel) {
  const auto plain = run_process(program("close_descriptors"), {"libc"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const auto r = tleak_run({}, {program("close_descriptors"), "libc"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, plain.out);
  EXPECT_EQ(r.out, "descriptors closed (libc)\n");
  EXPECT_TRUE(report_["run"]["program"]["exit_scan"]);
  EXPECT_EQ(report_["notes"].size(), 0u) << report_["notes"].dump();
  EXPECT_EQ(site_at(at("close_descriptors.c", "LEAK"))["leaked_bytes"], 1000);
  EXPECT_EQ(site_at(at("close_descriptors.c", "KEPT"))["reachable_at_exit_bytes"], 2000);
  EXPECT_EQ(report_["totals"]["leaked_bytes"], 1000);
}

// Under a low limit on open descriptors (`ulimit -n 48`: some shells' and services' setting) the
// agent still starts (its copy of the stream goes as high as the limit lets, not at its usual 900),
// tleak raises its own soft limit to the hard one (the symbols it reads ahead hold one or two a
// module: 300 for a PyTorch program, whose frames went unresolved at 16), and the program sees the
// limit it was given.
TEST_F(ProgramRun, ALowDescriptorLimitIsTheProgramsAndNotTleaks) {
  rlimit limit{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &limit), 0);
  if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max <= 48) GTEST_SKIP() << "the hard limit is " << limit.rlim_max;
  const std::string hard = limit.rlim_max == RLIM_INFINITY ? "unlimited" : std::to_string(limit.rlim_max);
  const auto r = tleak_run_via({"/usr/bin/prlimit", "--nofile=48:" + hard}, {},
                               {"/bin/sh", "-c",
                                "ulimit -n; grep '^Max open files' /proc/$PPID/limits | tr -s ' '; exec " +
                                    program("exit_reachability")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "48\nMax open files " + hard + " " + hard + " files \nexit-reachability done\n");
  expect_exit_reachability_figures();
}

// Closed past the C library, the channel is gone: the report says so, and tleak does not spin on
// the ended stream while the program goes on (it sleeps a second).
TEST_F(ProgramRun, AChannelTakenAwayIsSaidAndNotSpunOn) {
  rusage before{}, after{};
  getrusage(RUSAGE_CHILDREN, &before);
  const auto r = tleak_run({}, {program("close_descriptors"), "raw"});
  getrusage(RUSAGE_CHILDREN, &after);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "descriptors closed (raw)\n");
  ASSERT_EQ(report_["notes"].size(), 1u) << report_["notes"].dump();
  EXPECT_NE(report_["notes"][0].get<std::string>().find("took tleak's channel to its agent away"), std::string::npos);
  EXPECT_FALSE(report_["run"]["program"]["exit_scan"]);
  const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  const double cpu = seconds(after.ru_utime) + seconds(after.ru_stime) - seconds(before.ru_utime) - seconds(before.ru_stime);
  EXPECT_LT(cpu, 0.6) << "tleak and the program used " << cpu << " s of CPU over a one-second sleep";
}

// C++ allocations that fail behave as without tleak, under the C library's malloc and under
// jemalloc's operator new (recorded at by the agent): the same exceptions caught, the new-handler
// called as many times, nothrow null.
TEST_F(ProgramRun, FailingCppAllocationsAreTheProgramsOwn) {
  std::vector<std::vector<std::string>> envs = {{}};
  if (std::filesystem::exists(kJemalloc)) envs.push_back({"LD_PRELOAD=" + kJemalloc});
  for (const auto& env : envs) {
    std::vector<std::string> plain_args = env;
    plain_args.push_back(program("failing_new"));
    const auto plain = run_process("/usr/bin/env", plain_args);
    EXPECT_EQ(plain.out, "caught 4, new-handler called 2 times, nothrow null, kept 7\n");
    const auto r = tleak_run({}, {program("failing_new")}, env);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, plain.out) << (env.empty() ? "glibc" : env[0]);
    EXPECT_EQ(report_["totals"]["leaked_bytes"], 0);
  }
}

// A message dlerror() holds when the plugin's first operator new comes (the agent looks up the
// next operator new then) is still the program's to read afterwards.
TEST_F(ProgramRun, APendingDlerrorMessageSurvivesThePluginsFirstNew) {
  const std::string plugin = program("liblocal_cxx_plugin.so");
  const auto plain = run_process(program("local_cxx_host"), {plugin, "pending"});
  ASSERT_EQ(plain.out, "rows 30, dlerror: kept\n");
  const auto r = tleak_run({}, {program("local_cxx_host"), plugin, "pending"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, plain.out);
}

// The same in a C++ program linked with its runtime: a failed dlopen, its first operator new, then
// dlerror(). Under tleak the message had been lost ("dlerror: lost").
TEST_F(ProgramRun, APendingDlerrorMessageSurvivesTheProgramsFirstNew) {
  const auto plain = run_process(program("cxx_pending_dlerror"), {});
  ASSERT_EQ(plain.out, "handle: none, dlerror: kept\n");
  const auto r = tleak_run({}, {program("cxx_pending_dlerror")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, plain.out);
  const Json& kept = site_at(at("cxx_pending_dlerror.cc", "KEPT"));
  EXPECT_EQ(kept["reachable_at_exit_bytes"], 400);
  EXPECT_EQ(kept["leaked_bytes"], 0);
}

// A thread on a 16 KiB stack that allocates with 5,000 bytes of it used: the agent's share of the
// stack per recorded allocation (about 3 KiB) must leave it room.
TEST_F(ProgramRun, AThreadOnASmallStackStillHasRoom) {
  // Counts small_stack.c's allocations: at its line (with their stacks) and without a stack.
  const auto counted = [this](int* at_line, int* without_stack) {
    *at_line = *without_stack = 0;
    const std::string line = at("small_stack.c", "SMALL");
    for (const Json& s : report_["sites"]) {
      const std::string label = s["label"];
      if (label.ends_with(line)) *at_line += s["allocations"].get<int>();
      if (label == "(no stack recorded)") *without_stack += s["allocations"].get<int>();
    }
  };
  int at_line = 0, without_stack = 0;
  // Room enough: two sites at the line (alloc_once is called from two places), each with its stack.
  auto r = tleak_run({}, {program("small_stack"), "3000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "ok\n");
  counted(&at_line, &without_stack);
  EXPECT_EQ(at_line, 2);
  EXPECT_EQ(without_stack, 0);
  const auto said_without_stack = [this] {
    for (const Json& n : report_["notes"]) {
      if (n.get<std::string>().starts_with("1 allocation is in the site '(no stack recorded)'")) return true;
    }
    return false;
  };
  EXPECT_FALSE(said_without_stack()) << report_["notes"].dump();
  // Near the end of the stack, where libunwind's walk overflowed it from 6,500 bytes used: the
  // second allocation is recorded without its stack, and the program runs as it does plain. The
  // same where libunwind knows the return addresses already ("warm"). At 8,300 bytes used (plain
  // runs to about 8,700) the agent's reading of the stack's bounds there overflowed it, and so did
  // the dynamic linker binding that reading's calls, until both moved (stack_room.h).
  for (const std::string used : {"6500", "7500", "8300"}) {
    for (const bool warm : {false, true}) {
      std::vector<std::string> command = {program("small_stack"), used};
      if (warm) command.push_back("warm");
      r = tleak_run({}, command);
      ASSERT_EQ(r.exit_code, 0) << used << (warm ? " warm: " : ": ") << r.err;
      EXPECT_EQ(r.out, "ok\n");
      counted(&at_line, &without_stack);
      EXPECT_EQ(at_line, 1) << used << (warm ? " warm" : "");
      EXPECT_EQ(without_stack, 1) << used << (warm ? " warm" : "");
      EXPECT_TRUE(said_without_stack()) << report_["notes"].dump();
    }
  }
}

// A coroutine on a 4 KiB stack of the program's own (tests/programs/coroutine_stack.c) runs as it
// does plain: the agent walks such a stack with its own walk only, which needs little of it, to the
// coroutine's entry. (libunwind's walk, after the agent's gave up at that entry, overflowed every
// such stack up to 7 KiB: SIGSEGV.) Each allocation keeps its stack, at the coroutine's line. The
// same on a thread whose first allocation is the coroutine's (its stand-in bounds were taken from
// the coroutine's stack).
TEST_F(ProgramRun, ACoroutineOnASmallStackRunsAsItDoesPlain) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"4096"}, {"16384"}, {"4096", "thread"}}) {
    const std::string size = args[0] + (args.size() > 1 ? " " + args[1] : "");
    const auto plain = run_process(program("coroutine_stack"), args);
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    ASSERT_EQ(plain.out, "1000 blocks, 11 switches\n");
    std::vector<std::string> command = {program("coroutine_stack")};
    command.insert(command.end(), args.begin(), args.end());
    const auto r = tleak_run({}, command);
    ASSERT_EQ(r.exit_code, 0) << size << r.err;
    EXPECT_EQ(r.out, plain.out) << size;
    const Json& coroutine = site_at(at("coroutine_stack.c", "CORO"));
    EXPECT_EQ(coroutine["allocations"], 1000) << size;
    EXPECT_EQ(coroutine["frees"], 1000) << size;
    EXPECT_EQ(coroutine["bytes_allocated"], 1000 * 32 + 999 * 1000 / 2) << size;
    EXPECT_EQ(coroutine["frames"][0]["function"], "coroutine") << size;
    for (const Json& s : report_["sites"]) EXPECT_NE(s["label"], "(no stack recorded)") << size;
  }
}

// A signal handler that allocates on an 8 KiB alternate signal stack (the classic SIGSTKSZ; the
// kernel's signal frame takes about 3.3 KiB of it): the agent's walk there (5-6 KiB where return
// addresses are new to libunwind) overflowed it into the heap, and glibc aborted the program.
// Judged against that stack, the handler's allocations are counted without their stacks; on a
// stack with room (64 KiB) they keep them, at the handler's line. The program's pending dlerror()
// message outlives its sigaltstack call (the output is plain's).
TEST_F(ProgramRun, ASignalHandlerOnASmallAlternateStackStillHasRoom) {
  const auto plain = run_process(program("alt_signal_stack"), {});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(plain.out, "ok 10, dlerror set\n");
  const auto allocations_labelled = [this](const std::string& label) {
    int n = 0;
    for (const Json& s : report_["sites"]) {
      if (s["label"].get<std::string>().ends_with(label)) n += s["allocations"].get<int>();
    }
    return n;
  };
  auto r = tleak_run({}, {program("alt_signal_stack")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, plain.out);
  EXPECT_EQ(allocations_labelled("(no stack recorded)"), 10);
  EXPECT_EQ(allocations_labelled(at("alt_signal_stack.c", "ALT")), 0);
  EXPECT_EQ(allocations_labelled(at("alt_signal_stack.c", "MAIN")), 1);
  r = tleak_run({}, {program("alt_signal_stack"), "65536"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, plain.out);
  EXPECT_EQ(allocations_labelled("(no stack recorded)"), 0);
  EXPECT_EQ(allocations_labelled(at("alt_signal_stack.c", "ALT")), 10);
  EXPECT_EQ(allocations_labelled(at("alt_signal_stack.c", "MAIN")), 1);
}

// tests/programs/unwind_shapes.c: rbp- and rsp-based frames, realigned stacks, mutual recursion
// past 64 frames, four threads; the frames the walk does not follow (a signal frame, a CFA given
// by DWARF expressions) are exactly those the program counts, and every other stack is
// libunwind's, address for address, at 12 frames and at 64.
TEST_F(ProgramRun, TheAgentsStackWalkGivesLibunwindsAddresses) {
  const auto plain = run_process(program("unwind_shapes"), {});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_match(plain.out, m, std::regex("allocations (\\d+), left to libunwind (\\d+)\n"))) << plain.out;
  const long allocations = std::stol(m[1]), left = std::stol(m[2]);
  EXPECT_EQ(left, 10);
  for (const std::string depth : {"12", "64"}) {
    const auto r = tleak_run({"--stack-depth", depth}, {program("unwind_shapes")}, {"TLEAK_AGENT_CHECK_UNWIND=1"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, plain.out);
    const UnwindCheck c = unwind_check_of(r.err);
    // The program's own and the C library's (stdout's buffer, the threads').
    EXPECT_GE(c.stacks, allocations) << r.err;
    EXPECT_LE(c.stacks, allocations + 10) << r.err;
    EXPECT_EQ(c.by_libunwind, left) << r.err;
    EXPECT_EQ(c.differed, 0) << r.err;
  }
}

// plugin_swap's runs (tests/programs/plugin_swap.c).
class PluginSwapRun : public ProgramRun {
 protected:
  // The run with `mode` ("" or "signal"): the function names of its one site at plugin_make, after
  // checking that the site holds all 20 allocations.
  std::vector<std::string> plugin_site_functions(const std::string& mode) {
    std::vector<std::string> command = {program("plugin_swap"), program("libframe_plugin_8.so"),
                                        program("libframe_plugin_104.so")};
    if (!mode.empty()) command.push_back(mode);
    const auto r = tleak_run({}, command);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "plugins at one address\n") << "the loader moved them: this run shows nothing";
    // One site: the same return address in both, and the same callers above it.
    std::vector<Json> made;
    for (const Json& s : report_["sites"]) {
      if (!s["frames"].empty() && s["frames"][0]["function"] == "plugin_make") made.push_back(s);
    }
    EXPECT_EQ(made.size(), 1u) << report_["sites"].dump(1).substr(0, 4000);
    if (made.size() != 1) return {};
    EXPECT_EQ(made[0]["allocations"], 20);
    EXPECT_EQ(made[0]["reachable_at_exit_bytes"], 2000);
    std::vector<std::string> functions;
    for (const Json& f : made[0]["frames"]) functions.push_back(f.value("function", ""));
    return functions;
  }
};

// Two plugins loaded in turn at one address, whose function has the same code and another frame
// size in each (tests/programs/plugin_swap.c): the walk's rule for that return address is
// forgotten when its plugin is unloaded, and every allocation keeps its caller.
TEST_F(PluginSwapRun, AnUnloadedObjectsFrameRulesAreForgotten) {
  const std::vector<std::string> functions = plugin_site_functions("");
  ASSERT_GE(functions.size(), 2u);
  EXPECT_EQ(functions[1], "main");
}

// The same plugins called from a signal handler: the kernel's signal frame hands each stack to
// libunwind, whose cache of how to step from each return address outlived the unload (half the
// allocations had plugin_make as their only frame) until its walks went by unw_step after one.
TEST_F(PluginSwapRun, AnUnloadedObjectsFrameRulesAreForgottenByLibunwindToo) {
  const std::vector<std::string> functions = plugin_site_functions("signal");
  ASSERT_GE(functions.size(), 3u);
  EXPECT_EQ(functions[1], "on_signal");
  // The kernel's signal frame, at the C library's trampoline, named as gdb names it.
  EXPECT_EQ(functions[2], "<signal handler called>");
  EXPECT_EQ(functions.back(), "main");
}

// tleak itself under memcheck, running a program (which runs as it is: Valgrind does not follow
// the child): no error, and every block freed, although `tleak run` leaves its run's memory to the
// exit outside Valgrind (core/diagnosis/src/left_for_exit.h).
TEST_F(ProgramRun, TleakItselfIsCleanUnderMemcheck) {
  const auto m = run_process(VALGRIND_PROGRAM, {"--leak-check=full", "--error-exitcode=9", TLEAK_BINARY, "run", "-o",
                                                path("report.json"), "--", program("growth")});
  ASSERT_EQ(m.exit_code, 0) << m.err;
  EXPECT_NE(m.err.find("ERROR SUMMARY: 0 errors"), std::string::npos) << m.err;
  EXPECT_NE(m.err.find("in use at exit: 0 bytes in 0 blocks"), std::string::npos) << m.err;
}

// The same from C, through <tleak/marks.h>.
TEST_F(ProgramRun, CKnowsWhetherItIsRecorded) {
  expect_output_recorded_and_plain("attached", "recorded 1, child 0\n", "recorded 0, child 0\n");
}

// Nothing the agent does registers the process with the kernel for something the program could
// ask for too: a membarrier(2) the program never registered for is refused under tleak as without.
TEST_F(ProgramRun, TheKernelRefusesTheProgramWhatItNeverRegisteredFor) {
  expect_output_recorded_and_plain("membarrier_probe", "membarrier without registering: EPERM\n",
                                   "membarrier without registering: EPERM\n");
}

// The agent writes its records into the message slots tleak shares with it, seen from the
// program: it maps them, each thread that allocated holds one while it lives (the main thread's
// and three others'), and a thread that ended gave its slot back.
TEST_F(ProgramRun, EachRecordingThreadHoldsAMessageSlotWhileItLives) {
  expect_output_recorded_and_plain("message_slots", "mapped 1, held with 3 threads 4, after 1\n", "no slots\n");
}

TEST_F(ProgramRun, OutputAndExitStatusAreTheProgramsOwn) {
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{program("resize_fork")}, {program("growth"), "leaky"}, {"/bin/sh", "-c", "echo hi; exit 5"}}) {
    const auto plain = run_process(command[0], {command.begin() + 1, command.end()});
    const auto tracked = tleak_run({"--format", "json"}, command);
    const std::string own = tracked.out.substr(0, plain.out.size());
    EXPECT_EQ(own, plain.out) << command[0];
    EXPECT_EQ(report_["run"]["program"]["exit_status"], plain.exit_code) << command[0];
  }
}

// A child made by a raw clone system call runs no fork handler: it still writes nothing of its own
// into tleak's stream (the agent's status page reads "off" in it), and leaves by exit() without an
// exit scan of its own. Only the parent's 3 lost blocks are leaks.
TEST_F(ProgramRun, AChildOfARawCloneIsNotTheParent) {
  const auto r = tleak_run({}, {program("raw_clone")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "raw clone done\n");
  EXPECT_TRUE(report_["run"]["program"]["exit_scan"]);
  EXPECT_EQ(site_at(at("raw_clone.c", "LOST"))["leaked_bytes"], 3000);
  EXPECT_EQ(report_["totals"]["leaked_bytes"], 3000);
  EXPECT_EQ(report_["totals"]["leaked_blocks"], 3);
  for (const Json& site : report_["sites"]) {
    EXPECT_EQ(site["label"].get<std::string>().find("raw_clone.c:" + std::to_string(line_of("raw_clone.c", "CHILD"))),
              std::string::npos) << site["label"];
  }
}

// A vfork child shares the parent's memory, the agent's with it, but not its descriptors: one it
// puts on the agent's channel number before it execs is its own table's. The parent's channel stays
// (before, it moved to a number only the child had, and the parent's records after the vfork were
// lost: no exit scan, its leaks unjudged).
TEST_F(ProgramRun, AVforkChildsDescriptorOnTheChannelsNumberIsItsOwn) {
  const auto r = tleak_run({}, {program("vfork_dup"), "dup"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "vfork done\n");
  EXPECT_TRUE(report_["run"]["program"]["exit_scan"]);
  EXPECT_EQ(report_["totals"]["leaked_bytes"], 3000);
  EXPECT_EQ(site_at(at("vfork_dup.c", "LOST"))["leaked_blocks"], 3);
  EXPECT_EQ(report_["notes"].dump().find("channel"), std::string::npos) << report_["notes"];
}

// A vfork child that calls exit() after a failed exec runs the exit handlers in the parent's memory:
// the agent's leaves the parent's recording alone (it had ended it there, and the parent's blocks
// after that went unrecorded). The C library's own teardown in the child marks every object's
// destructors as run, for the parent too, so the parent's exit runs none, the agent's with them: no
// exit scan, as without tleak no destructor of the program's would run; its blocks are unjudged.
TEST_F(ProgramRun, AVforkChildsExitLeavesTheParentsRecordingAlone) {
  const auto r = tleak_run({}, {program("vfork_dup"), "exit"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "vfork done\n");
  EXPECT_FALSE(report_["run"]["program"]["exit_scan"]);
  const Json& lost = site_at(at("vfork_dup.c", "LOST"));
  EXPECT_EQ(lost["allocations"], 3);
  EXPECT_EQ(lost["unjudged_at_exit_bytes"], 3000);
}

// A malloc built into the executable comes before the agent in the loader's order. An arena no
// call leaves: nothing reached tleak, which says why in one line instead of reporting a program that
// allocates nothing (exit 2, no report). A wrapper that goes on to the next malloc: its blocks are
// seen, exactly, and a note says what would not be.
TEST_F(ProgramRun, AMallocBuiltIntoTheExecutableIsNamed) {
  auto r = tleak_run({}, {program("own_malloc_arena")});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.out, "own malloc done\n");
  EXPECT_EQ(r.err, "tleak: no allocation of '" + program("own_malloc_arena") +
                       "' reached tleak (it ended with exit status 0): the program's executable (" +
                       program("own_malloc_arena") + ") defines malloc, free, calloc, realloc itself, ahead of tleak's "
                       "agent in the loader's order, and tleak sees a program's blocks only through the calls it "
                       "interposes\n");
  EXPECT_FALSE(std::filesystem::exists(path("report.json")));

  malloc_of_its_own_ = true;
  r = tleak_run({}, {program("own_malloc_wrapped")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "own malloc done\n");
  EXPECT_EQ(report_["totals"]["leaked_bytes"], 3000);
  EXPECT_EQ(report_["totals"]["leaked_blocks"], 3);
  const std::string notes = report_["notes"].dump();
  EXPECT_NE(notes.find("defines malloc, free itself, ahead of tleak's agent in the loader's order: tleak sees only"),
            std::string::npos) << notes;
  // Programs that define none have no such note (every tleak_run checks): python3.11 too, whose
  // undefined symbols for malloc and free the loader finds first.
  malloc_of_its_own_ = false;
  ASSERT_EQ(tleak_run({}, {program("growth"), "leaky"}).exit_code, 0);
  ASSERT_EQ(tleak_run({}, {TLEAK_PYTHON, "-c", "print(1)"}).exit_code, 0);
}

// A program that enters a seccomp sandbox whose filter kills it at any socket call (the calls the
// agent reaches tleak by; tests/programs/sandboxed.c) runs as it does alone: the agent sends what it
// recorded and stops before the filter goes in, whichever call installs it. (It was killed by
// SIGSYS at its exit, when the agent sent its exit fence.) What came before is reported, what came
// after is not, and a note says why. A filter that only fails those calls leaves the agent
// recording until a send is refused; what it sent before the filter is reported, and a note says why.
TEST_F(ProgramRun, AProgramEnteringASeccompSandboxRunsAsItDoesAlone) {
  const std::string note =
      "the program entered a seccomp sandbox (prctl(PR_SET_SECCOMP) or the seccomp system call), whose filter may "
      "forbid the calls tleak's agent makes to reach tleak: the agent sent what it had recorded and stopped recording "
      "before it, so what the program did after that is not in this report, and blocks left allocated are reported "
      "as unjudged, not as leaks";
  const std::string refused =
      "a seccomp filter the program installed refused tleak's agent its sends to tleak: what the program did from then "
      "on is not in this report, and blocks left allocated are reported as unjudged, not as leaks";
  for (const char* mode : {"prctl", "seccomp", "strict", "refused"}) {
    const auto plain = run_process(program("sandboxed"), {mode});
    ASSERT_EQ(plain.exit_code, 0) << mode << plain.err;
    ASSERT_EQ(plain.out, "sandboxed\n") << mode;
    const auto r = tleak_run({}, {program("sandboxed"), mode});
    ASSERT_EQ(r.exit_code, 0) << mode << r.err;
    EXPECT_EQ(r.out, plain.out) << mode;
    EXPECT_EQ(report_["run"]["program"]["exit_status"], 0) << mode;
    EXPECT_FALSE(report_["run"]["program"]["exit_scan"]) << mode;
    const Json& before = site_at(at("sandboxed.c", "BEFORE"));
    EXPECT_EQ(before["allocations"], 100) << mode;
    EXPECT_EQ(before["frees"], 0) << mode;
    EXPECT_EQ(before["unjudged_at_exit_bytes"], 100000) << mode;
    const std::string after = at("sandboxed.c", "AFTER");
    for (const Json& site : report_["sites"]) {
      EXPECT_FALSE(site["label"].get<std::string>().ends_with(after)) << mode << site["label"];
    }
    EXPECT_EQ(report_["notes"], Json::array({std::string(mode) == "refused" ? refused : note})) << mode;
  }
}

TEST_F(ProgramRun, ForksWhileOtherThreadsAllocateNeverHangAChild) {
  for (int round = 0; round < 3; ++round) {
    const auto started = std::chrono::steady_clock::now();
    const auto r = tleak_run({}, {program("fork_under_threads")});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "children ok: 50 of 50\n");
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(60));
  }
}

// Forks under jemalloc, whose fork handler takes its locks while a thread inside it may be noting
// a mapping (allocator_regions.h): a lock taken before the fork deadlocked 2 runs in 10 (here 4
// runs of 50 forks each).
TEST_F(ProgramRun, ForksUnderAPreloadedMallocNeverHang) {
  SKIP_WITHOUT_JEMALLOC();
  for (int round = 0; round < 4; ++round) {
    const auto r = tleak_run({}, {program("fork_under_threads")}, {"LD_PRELOAD=" + kJemalloc});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "children ok: 50 of 50\n");
  }
}

// exit() or _exit() from a signal handler that interrupted malloc, the agent's or the C library's.
// Under _exit the agent does not scan (a heap halfway through a change), as a note says.
TEST_F(ProgramRun, ExitFromASignalHandlerNeverHangs) {
  for (int round = 0; round < 10; ++round) {
    const std::string how = round % 2 == 0 ? "exit" : "_exit";
    const auto started = std::chrono::steady_clock::now();
    const auto r = tleak_run({}, {program("exit_in_signal"), how});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(report_["run"]["program"]["exit_status"], 0);
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(30));
    if (how == "_exit") {
      EXPECT_FALSE(report_["run"]["program"]["exit_scan"]);
      bool noted = false;
      for (const Json& note : report_["notes"]) {
        noted = noted || note.get<std::string>().starts_with(
                             "no exit scan: the program ended without running its exit handlers (killed, _exit from a "
                             "signal handler,");
      }
      EXPECT_TRUE(noted) << report_["notes"];
    }
  }
}

// The program gets the environment the user gave tleak: glibc's tunables exactly as they were,
// none of them when there were none, and nothing of tleak's own (an earlier version restarted
// itself with a tunable of its own and had to put the user's back).
TEST_F(ProgramRun, TheProgramGetsTheUsersGlibcTunables) {
  const std::string script = "env | grep -E '^(GLIBC_TUNABLES|TLEAK_CALLER)' | sort; true";
  const std::string run_tleak = std::string(TLEAK_BINARY) + " run -o " + path("report.json") + " -- /bin/sh -c \"" + script + "\"";
  const auto unset = run_process("/usr/bin/env", {"-u", "GLIBC_TUNABLES", "/bin/sh", "-c", run_tleak});
  ASSERT_EQ(unset.exit_code, 0) << unset.err;
  EXPECT_EQ(unset.out, "");
  const auto own = run_process("/usr/bin/env", {"GLIBC_TUNABLES=glibc.malloc.check=0", "/bin/sh", "-c", run_tleak});
  ASSERT_EQ(own.exit_code, 0) << own.err;
  EXPECT_EQ(own.out, "GLIBC_TUNABLES=glibc.malloc.check=0\n");
}

// ps and top show the program's parent as "tleak" (not "exe", as a re-execution of
// /proc/self/exe by an earlier version named it).
TEST_F(ProgramRun, TleakKeepsItsNameWhileItRunsAProgram) {
  const auto r = tleak_run({}, {"/bin/sh", "-c", "cat /proc/$PPID/comm"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "tleak\n");
}

// The agent brings into a program only what it must (libunwind, libgcc's unwinder): a C program
// gets no C++ runtime from it, whose symbols would otherwise come first for every library the
// program loads.
TEST_F(ProgramRun, AProgramGetsNoCppRuntimeFromTheAgent) {
  const auto r = tleak_run({}, {"/bin/cat", "/proc/self/maps"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("libtleak_preload.so"), std::string::npos) << r.out;  // the agent was there
  EXPECT_EQ(r.out.find("libstdc++"), std::string::npos) << r.out;
}

// The agent answers libunwind's sigprocmask calls itself during a capture; a handler that
// interrupts a capture and sets masks of its own must get the real ones.
TEST_F(ProgramRun, TheProgramsSignalMasksKeepTheirMeaning) {
  const auto plain = run_process(program("signal_masks"), {});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  for (int round = 0; round < 3; ++round) {
    const auto r = tleak_run({}, {program("signal_masks")});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.substr(0, plain.out.size()), plain.out) << r.err;
    EXPECT_EQ(report_["run"]["program"]["exit_status"], 0);
  }
}

TEST_F(ProgramRun, CancelledThreadsNeverLeaveTheAgentLocked) {
  const auto r = tleak_run({}, {program("cancelled_threads")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "cancel ok\n");
  EXPECT_EQ(report_["run"]["iterations"], 200);
}

TEST_F(ProgramRun, AProgramThatExecsIsFollowedIntoItsNewImage) {
  const auto r = tleak_run({}, {"/bin/sh", "-c", "exec " + program("growth") + " leaky"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(report_["run"]["scenario"], "growth");
  EXPECT_EQ(report_["summary"]["verdict"], "growth");
  EXPECT_NEAR(site_at(at("growth.c", "KEEP"))["growth"]["slope_bytes_per_iteration"].get<double>(), 4096.0, 1.0);
}

// tleak copied on its own: without its agent library it refuses to run anything, naming the path;
// with it but without its Python module, a Python program's `import tleak` fails (as the program's
// own error) and the report says why, unless the program's PYTHONPATH has the module.
TEST_F(ProgramRun, ACopiedTleakSaysWhatItMisses) {
  const std::filesystem::path bin = path("bin");
  std::filesystem::create_directories(bin);
  const std::filesystem::path copy = bin / "tleak";
  std::filesystem::copy_file(TLEAK_BINARY, copy);
  const std::string report = path("copied.json");
  const std::vector<std::string> python = {TLEAK_PYTHON, "-c", "import tleak"};
  const auto run = [&](const std::string& python_path) {
    std::vector<std::string> args = {"-u", "PYTHONPATH"};
    if (!python_path.empty()) args.push_back("PYTHONPATH=" + python_path);
    args.insert(args.end(), {copy.string(), "run", "-o", report, "--"});
    args.insert(args.end(), python.begin(), python.end());
    return run_process("/usr/bin/env", args);
  };
  auto r = run("");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "tleak: the agent library " + (bin.parent_path() / "lib/tleak/libtleak_preload.so").string() +
                       " is missing (is tleak installed whole?)\n");
  EXPECT_FALSE(std::filesystem::exists(report));

  std::filesystem::copy_file(std::filesystem::path(TLEAK_BINARY).parent_path() / "../agent/libtleak_preload.so",
                             bin / "libtleak_preload.so");
  const std::string note = "note: tleak's Python module (tleak.py) is neither beside tleak";
  r = run("");
  EXPECT_NE(r.err.find("ModuleNotFoundError: No module named 'tleak'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(note), std::string::npos) << r.err;
  EXPECT_EQ(Json::parse(std::ifstream(report))["run"]["program"]["exit_status"], 1);

  r = run(std::string(TLEAK_SOURCE_DIR) + "/python");
  EXPECT_EQ(r.err.find("ModuleNotFoundError"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(note), std::string::npos) << r.err;
  // A program that is not Python needs no module.
  r = run_process("/usr/bin/env", {"-u", "PYTHONPATH", copy.string(), "run", "-o", report, "--", "/bin/true"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find(note), std::string::npos) << r.err;
}

TEST_F(ProgramRun, CommandsThatCannotRunAreRefusedInOneLine) {
  expect_refused(tleak_run({}, {"no-such-command-tleak"}), "command not found");
  expect_refused(tleak_run({}, {"/nonexistent/prog"}), "No such file");
  const std::string text = path("not-executable");
  std::ofstream(text) << "data\n";
  expect_refused(tleak_run({}, {text}), "not executable");
  expect_refused(tleak_run({}, {dir_.string()}), "directory");
  expect_refused(tleak_run({}, {program("static_program")}), "statically linked");
  // Its malloc is AddressSanitizer's: tleak would see nothing, or (its runtime as a library) the
  // program would refuse to start behind the agent with a message that blamed neither.
  const auto sanitized = tleak_run({}, {program("sanitized_program")});
  expect_refused(sanitized, "built with AddressSanitizer");
  EXPECT_EQ(sanitized.out, "") << "the program ran";
  // Set-user-ID to another user (nobody): the loader would ignore LD_PRELOAD, and the program must
  // not run for nothing.
  if (geteuid() == 0) {
    const std::string setuid = path("setuid_growth");
    std::filesystem::copy_file(program("growth"), setuid);
    ASSERT_EQ(chown(setuid.c_str(), 65534, static_cast<gid_t>(-1)), 0);
    ASSERT_EQ(chmod(setuid.c_str(), 04755), 0);
    const auto r = tleak_run({}, {setuid, "leaky"});
    expect_refused(r, "set-user-ID");
    EXPECT_EQ(r.out, "") << "the program ran";
  }
  expect_refused(run_process(TLEAK_BINARY, {"run", "--"}), "nothing after --");
  expect_refused(run_process(TLEAK_BINARY, {"run", "append-loop", "--", "/bin/true"}), "not both");
  expect_refused(tleak_run({"--max-live", "-5"}, {"/bin/true"}), "--max-live");
  expect_refused(tleak_run({"--max-live", "1e30"}, {"/bin/true"}), "out of range");
  expect_refused(tleak_run({"--sample-every", "nan"}, {"/bin/true"}), "--sample-every");
  expect_refused(tleak_run({"--sample-every", "2h"}, {"/bin/true"}), "out of range (1 ms to 1 hour)");
  expect_refused(tleak_run({"--sample-every", "1d"}, {"/bin/true"}), "unknown unit in '1d' (use ms, s, m or h)");
  expect_refused(tleak_run({"--snapshot-signal", "KILL"}, {"/bin/true"}), "--snapshot-signal");
  // Where the report cannot be written (here /proc, which refuses to create files even for root, as
  // a read-only mount does), tleak says so before the program runs: it prints nothing.
  for (const std::vector<std::string>& where : {std::vector<std::string>{"-o", "/proc/tleak-report.json"}, {}}) {
    std::vector<std::string> args = {"-c", "cd /proc && exec \"$0\" run \"$@\" -- /bin/echo ran", TLEAK_BINARY};
    args.insert(args.end(), where.begin(), where.end());
    const auto r = run_process("/bin/sh", args);
    expect_refused(r, where.empty() ? "cannot write the report in the current directory (/proc)" : "/proc/tleak-report.json");
    EXPECT_EQ(r.out, "") << "the program ran";
  }
}

// tleak is built as this test is (the sanitize preset builds both with AddressSanitizer).
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kTleakUnderAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kTleakUnderAddressSanitizer = true;
#else
constexpr bool kTleakUnderAddressSanitizer = false;
#endif
#else
constexpr bool kTleakUnderAddressSanitizer = false;
#endif

// Without /proc (a mount namespace or a jail that lacks it) tleak cannot follow a program: it says
// so, rather than that its agent is missing (it finds the agent through /proc/self/exe).
TEST_F(ProgramRun, WithoutProcTleakSaysSo) {
  if (kTleakUnderAddressSanitizer) GTEST_SKIP() << "tleak built with AddressSanitizer needs /proc itself (its runtime reads it)";
  if (run_process("/usr/bin/unshare", {"-m", "/bin/sh", "-c", "umount -l /proc"}).exit_code != 0) {
    GTEST_SKIP() << "no mount namespace of its own here";
  }
  const auto r = run_process("/usr/bin/unshare",
                             {"-m", "/bin/sh", "-c", "umount -l /proc && exec \"$0\" run -o \"$1\" -- /bin/echo ran",
                              TLEAK_BINARY, path("report.json")});
  expect_refused(r, "tleak: /proc is not mounted here (or not readable)");
  EXPECT_EQ(r.out, "") << "the program ran";
}

TEST_F(ProgramRun, AProgramThatDiesAtOnceIsReportedAsKilled) {
  const auto r = tleak_run({}, {"/bin/sh", "-c", "kill -9 $$"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(report_["run"]["program"]["exit_signal"], SIGKILL);
  EXPECT_NE(r.err.find("killed by signal 9"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tleak::program_tests
