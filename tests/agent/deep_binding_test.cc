// A library the program loads with dlopen(RTLD_DEEPBIND) binds its calls to malloc and free to the
// C library's, past tleak's agent (tests/programs/deep_bound.c): the agent binds them to its own
// after the load, so that the blocks the program hands it and those it makes are seen, and the
// loader still finds every library where it would without tleak.
#include "program_run.h"

namespace tleak::program_tests {

namespace {

class DeepBound : public ProgramRun {
 protected:
  // The sites whose first frame is at `marker` in the plugin, by the program's line calling it.
  std::map<int, const Json*> plugin_sites_at(const std::string& marker) const {
    std::map<int, const Json*> by_caller;
    const int line = line_of("deep_bound_plugin.c", marker);
    for (const Json& s : report_["sites"]) {
      const Json& frames = s["frames"];
      if (frames.size() < 2 || frames[0]["line"] != line || frames[0]["file"].get<std::string>().find("deep_bound_plugin.c") == std::string::npos) continue;
      by_caller[frames[1]["line"].get<int>()] = &s;
    }
    return by_caller;
  }

  // The run of `host` loading the plugin named `library` with `binding`: every block seen, the
  // lost one the only leak, as memcheck says.
  void expect_every_block_seen(const std::string& host, const std::string& binding, const std::string& library,
                               const std::vector<std::string>& env = {}) {
    SCOPED_TRACE(host + " " + binding + " " + library);
    const auto r = tleak_run({}, {program(host), binding, library}, env);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "done\n");
    // The note on what the library's constructors allocated unseen, and how the scan read it.
    expect_one_note_starting(
        "the program loaded 1 library with RTLD_DEEPBIND, whose calls tleak's agent bound to its own once loaded");
    EXPECT_EQ(report_["totals"]["leaked_bytes"], 1234);
    EXPECT_EQ(report_["totals"]["leaked_blocks"], 1);
    // The program's blocks the library freed: all freed (before, each read as still allocated).
    const Json& handed = site_at(at("deep_bound.c", "HANDED"));
    EXPECT_EQ(handed["allocations"], 50);
    EXPECT_EQ(handed["frees"], 50);
    EXPECT_EQ(handed["leaked_bytes"], 0);
    // The library's own blocks (before, none was in the report).
    const auto made = plugin_sites_at("MADE");
    ASSERT_EQ(made.size(), 2u) << report_["sites"].dump(1).substr(0, 4000);
    const Json& lost = *made.at(line_of("deep_bound.c", "LOST"));
    EXPECT_EQ(lost["verdict"], "leak");
    EXPECT_EQ(lost["leaked_bytes"], 1234);
    const Json& freed = *made.begin()->second;
    EXPECT_EQ(freed["allocations"], 50);
    EXPECT_EQ(freed["frees"], 50);
    const auto zeroed = plugin_sites_at("ZEROED");
    ASSERT_EQ(zeroed.size(), 1u);
    EXPECT_EQ((*zeroed.begin()->second)["bytes_allocated"], 50 * 200);
    const auto grown = plugin_sites_at("GROWN");
    ASSERT_EQ(grown.size(), 1u);
    EXPECT_EQ((*grown.begin()->second)["bytes_allocated"], 50 * 2000);
    EXPECT_EQ((*grown.begin()->second)["frees"], 50);
  }
};

TEST_F(DeepBound, ALibraryLoadedByPathIsSeenThroughTheAgent) {
  for (const char* binding : {"now", "lazy"}) expect_every_block_seen("deep_bound", binding, program("libdeep_bound_plugin.so"));
  // Its GOT entries made read-only once bound (-z now, -z relro), and called through them (-fno-plt).
  expect_every_block_seen("deep_bound", "now", program("libdeep_bound_plugin_relro.so"));
  expect_memcheck_loses({program("deep_bound"), "now", program("libdeep_bound_plugin.so")}, 1234);
}

// Loaded by the process whose forked copy tleak records (--record-fork): the copy inherits the
// library bound to the agent's functions.
TEST_F(DeepBound, ALibraryLoadedBeforeTheForkIsSeenInTheCopyRecorded) {
  const auto r = tleak_run({"--record-fork"}, {program("deep_bound"), "fork", program("libdeep_bound_plugin.so")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "done\n");
  EXPECT_TRUE(report_["run"]["program"]["forked_copy"]);
  const Json& handed = site_at(at("deep_bound.c", "HANDED"));
  EXPECT_EQ(handed["allocations"], 50);
  EXPECT_EQ(handed["frees"], 50);
  const auto made = plugin_sites_at("MADE");
  ASSERT_EQ(made.size(), 2u) << report_["sites"].dump(1).substr(0, 4000);
  EXPECT_EQ((*made.at(line_of("deep_bound.c", "LOST")))["leaked_bytes"], 1234);
  EXPECT_EQ(report_["totals"]["leaked_bytes"], 1234);
}

// Named bare, found on LD_LIBRARY_PATH by a caller without a RUNPATH: the loader searches the same
// places whoever calls it, and the agent takes the call.
TEST_F(DeepBound, ALibraryFoundOnTheLibraryPathIsSeenThroughTheAgent) {
  expect_every_block_seen("deep_bound", "now", "libdeep_bound_plugin.so", {"LD_LIBRARY_PATH=" + program("")});
}

// Named bare and found through the calling program's own RUNPATH ($ORIGIN): only a dlopen called
// from the program finds it, so the agent leaves the call to the C library as it came, and a note
// says what that leaves unseen. A dlopen without RTLD_DEEPBIND finds it the same way.
TEST_F(DeepBound, ALibraryFoundThroughTheCallersRunpathIsLoadedAsWithoutTleak) {
  const auto r = tleak_run({}, {program("deep_bound_runpath"), "now", "libdeep_bound_plugin.so"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "done\n");
  expect_one_note_starting(
      "1 dlopen call with RTLD_DEEPBIND named a library the loader looks for from the calling object's place");
  EXPECT_NE(r.err.find("note: 1 dlopen call with RTLD_DEEPBIND"), std::string::npos) << r.err;

  const auto plain = tleak_run({}, {program("deep_bound_runpath"), "plain", "libdeep_bound_plugin.so"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.out, "done\n");
  EXPECT_EQ(report_["notes"], Json::array());
  EXPECT_EQ(report_["totals"]["leaked_bytes"], 1234);
}

}  // namespace
}  // namespace tleak::program_tests
