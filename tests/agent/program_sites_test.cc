// Where a program's memory goes, site by site: verdicts at the program's own lines (C, C++, clang,
// inlined calls, plugins, debug info found by a debuglink), exact totals over threads, realloc
// chains and forks, and the page of a program's report.
#include "program_run.h"

#include <map>

namespace tleak::program_tests {

namespace {

TEST_F(ProgramRun, LoopKeepingABlockPerIterationIsGrowthAtItsLine) {
  const auto r = tleak_run({}, {program("growth"), "leaky"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "growth leaky done\n");  // the program's own output, untouched
  EXPECT_EQ(report_["summary"]["verdict"], "growth");
  const Json& keep = site_at(at("growth.c", "KEEP"));
  EXPECT_EQ(keep["verdict"], "growth");
  EXPECT_NEAR(keep["growth"]["slope_bytes_per_iteration"].get<double>(), 4096.0, 1.0);
  EXPECT_EQ(keep["allocations"], 30);
  EXPECT_EQ(keep["peak_live_bytes"], 30 * 4096);
  EXPECT_EQ(site_at(at("growth.c", "SCRATCH"))["verdict"], "bounded");
  EXPECT_EQ(site_at(at("growth.c", "SCRATCH"))["peak_live_bytes"], 64 * 1024);
  EXPECT_EQ(report_["run"]["iterations"], 30);
  EXPECT_EQ(report_["run"]["program"]["clock"], "iterations");
  EXPECT_EQ(report_["run"]["program"]["exit_status"], 0);
  EXPECT_TRUE(report_["run"]["program"]["exit_scan"]);
  EXPECT_EQ(report_["totals"]["leaked_bytes"], 0);
}

// run --html with a program: the page is written beside the report, and carries the same verdict
// and the program's sites (what the page shows is tested in a browser: tests/web/page_test.mjs).
TEST_F(ProgramRun, HtmlPageOfAProgramsReport) {
  const auto r = tleak_run({"--html", path("report.html")}, {program("growth"), "leaky"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(path("report.html"));
  const std::string page((std::istreambuf_iterator<char>(in)), {});
  const std::string open = "<script type=\"application/json\" id=\"tleak-report\">";
  const auto begin = page.find(open);
  ASSERT_NE(begin, std::string::npos);
  const Json data = Json::parse(page.substr(begin + open.size(), page.find("</script>", begin) - begin - open.size()));
  EXPECT_EQ(data["report"]["summary"], report_["summary"]);
  EXPECT_EQ(data["report"]["run"]["program"]["command"], report_["run"]["program"]["command"]);
  EXPECT_EQ(data["site_count"], report_["sites"].size());
}

TEST_F(ProgramRun, AClangBuiltProgramIsNamedByFileAndLineToo) {
  // clang emits DWARF 5 without .debug_aranges; libdw alone then finds no line for any address.
  if (!std::filesystem::exists(program("growth_clang"))) GTEST_SKIP() << "clang is not installed";
  const auto r = tleak_run({}, {program("growth_clang"), "leaky"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json& keep = site_at(at("growth.c", "KEEP"));
  EXPECT_EQ(keep["verdict"], "growth");
  EXPECT_EQ(keep["allocations"], 30);
}

// Debug info split off into a file named by .gnu_debuglink (objcopy --only-keep-debug) is found
// beside the program, and only when its CRC matches: another file of that name gives no lines.
TEST_F(ProgramRun, DebugInfoNamedByADebuglinkIsFoundBesideTheProgram) {
  const auto shell = [](const std::string& command) {
    const auto r = run_process("/bin/sh", {"-c", command});
    ASSERT_EQ(r.exit_code, 0) << command << "\n" << r.err;
  };
  // Without its build ID: the lookup by build ID must not be what finds it.
  shell("cd " + dir_.string() + " && objcopy --only-keep-debug " + program("growth") + " growth.debug && " +
        "objcopy --strip-debug --remove-section=.note.gnu.build-id --add-gnu-debuglink=growth.debug " +
        program("growth") + " growth");
  auto r = tleak_run({}, {path("growth"), "leaky"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json& keep = site_at(at("growth.c", "KEEP"));
  EXPECT_EQ(keep["verdict"], "growth");
  EXPECT_EQ(keep["allocations"], 30);

  shell("cd " + dir_.string() + " && objcopy --only-keep-debug " + program("threads") + " growth.debug");
  r = tleak_run({}, {path("growth"), "leaky"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int program_frames = 0;
  for (const Json& s : report_["sites"]) {
    for (const Json& f : s["frames"]) {
      if (f["module"] != "growth") continue;
      ++program_frames;
      EXPECT_EQ(f["file"], "") << s["label"];  // no line from another program's debug info
    }
  }
  EXPECT_GT(program_frames, 0);
  EXPECT_EQ(report_["summary"]["verdict"], "growth");
}

TEST_F(ProgramRun, TheSameLoopFreeingItsBlockIsBounded) {
  const auto r = tleak_run({"--fail-on", "any"}, {program("growth"), "fixed"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // No site can be judged retained without uses seen: the summary does not say "0 retained".
  EXPECT_NE(r.err.find("sites: 0 leak, 0 growth, "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" bounded (retained not measured: no uses seen)\n"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(" retained, "), std::string::npos) << r.err;
  // Nor a reserve of the C library's allocator, which tleak does not see.
  EXPECT_NE(r.err.find("totals: peak live 68.0 KiB, leaked 0 B"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("reserved"), std::string::npos) << r.err;
  // The report says so: null, not the live bytes under another name.
  EXPECT_TRUE(report_["totals"]["peak_reserved_bytes"].is_null()) << report_["totals"].dump();
  ASSERT_EQ(report_["totals"]["allocators"].size(), 1u);
  const Json& malloc_totals = report_["totals"]["allocators"][0];
  EXPECT_TRUE(malloc_totals["peak_reserved_bytes"].is_null()) << malloc_totals.dump();
  EXPECT_TRUE(malloc_totals["peak_unused_reserved_bytes"].is_null()) << malloc_totals.dump();
  EXPECT_EQ(malloc_totals["peak_live_bytes"], report_["totals"]["peak_live_bytes"]);
  EXPECT_EQ(report_["summary"]["verdict"], "bounded");
  for (const Json& s : report_["sites"]) EXPECT_EQ(s["verdict"], "bounded") << s.dump();
  EXPECT_EQ(site_at(at("growth.c", "KEEP"))["peak_live_bytes"], 4096);
}

TEST_F(ProgramRun, EightThreadsFreeingAcrossThreadsGiveExactTotals) {
  const auto r = tleak_run({}, {program("threads")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json& s = site_at(at("threads.c", "ALLOC"));
  EXPECT_EQ(s["allocations"], 16000);
  EXPECT_EQ(s["frees"], 16000);
  std::int64_t bytes = 0;
  for (int i = 0; i < 2000; ++i) bytes += 16 + (i % 7) * 8;
  EXPECT_EQ(s["bytes_allocated"], 8 * bytes);
  EXPECT_EQ(s["final_live_bytes"], 0);
  EXPECT_EQ(s["reachable_at_exit_bytes"], 0);
  EXPECT_EQ(report_["totals"]["leaked_bytes"], 0);
}

TEST_F(ProgramRun, ReallocChainsAlignedBlocksAndAForkedChild) {
  const auto r = tleak_run({}, {program("resize_fork")});
  EXPECT_EQ(r.exit_code, 3) << "3: the program failed (it exits 7)\n" << r.err;
  EXPECT_NE(r.err.find("exited with status 7"), std::string::npos) << r.err;
  EXPECT_EQ(report_["run"]["program"]["exit_status"], 7);
  EXPECT_NE(r.out.find("child allocated\n"), std::string::npos);
  EXPECT_NE(r.out.find("aligned ok, overflow refused, child exit 0\n"), std::string::npos) << r.out;
  const Json& chain = site_at(at("resize_fork.c", "REALLOC"));
  EXPECT_EQ(chain["allocations"], 100);
  EXPECT_EQ(chain["frees"], 100);
  EXPECT_EQ(chain["bytes_allocated"], 5050000);  // 1000 + 2000 + ... + 100000
  EXPECT_EQ(chain["peak_live_bytes"], 100000);
  EXPECT_EQ(site_at(at("resize_fork.c", "ALIGNED"))["peak_live_bytes"], 1000);
  // glibc's reallocarray calls realloc through the PLT, so the agent's realloc runs inside its
  // reallocarray: each block is still counted once, at the program's line.
  const Json& array = site_at(at("resize_fork.c", "REALLOCARRAY"));
  EXPECT_EQ(array["allocations"], 50);
  EXPECT_EQ(array["frees"], 50);
  EXPECT_EQ(array["bytes_allocated"], 510000);  // (100 + 200 + ... + 5000) ints of 4 bytes
  EXPECT_EQ(array["peak_live_bytes"], 20000);
  // No site starts inside the agent.
  for (const Json& s : report_["sites"]) {
    ASSERT_FALSE(s["frames"].empty());
    EXPECT_NE(s["frames"][0]["module"], "libtleak_preload.so") << s.dump();
  }
  // The child's megabyte is the child's: never in the parent's stream.
  for (const Json& s : report_["sites"]) EXPECT_LT(s["peak_live_bytes"].get<std::int64_t>(), 1 << 20) << s.dump();
  EXPECT_EQ(report_["totals"]["leaked_bytes"], 0);
}

// A plugin loaded and unloaded 100 times, each time allocating from its own code: the agent's list
// of loaded objects (which answers libunwind's searches) follows every load and unload, every
// block is counted at the plugin's line, and the program's own dl_iterate_phdr sees what it sees
// without tleak.
TEST_F(ProgramRun, PluginsLoadedAndUnloadedAreFollowed) {
  const std::string plugin = program("libdlopen_plugin.so");
  const auto plain = run_process(program("dlopen_churn"), {plugin});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(plain.out, "objects one more while loaded, as before after\n");
  const auto r = tleak_run({}, {program("dlopen_churn"), plugin});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, plain.out);
  const Json& s = site_at(at("dlopen_plugin.c", "PLUGIN"));
  EXPECT_EQ(s["allocations"], 100);
  EXPECT_EQ(s["bytes_allocated"], 100000);
  EXPECT_EQ(s["reachable_at_exit_bytes"], 100000);
  EXPECT_EQ(s["frames"][0]["function"], "plugin_make");
  EXPECT_EQ(s["frames"][1]["function"], "main");
  EXPECT_EQ(report_["totals"]["leaked_bytes"], 0);
}

// The same plugin loaded by a relative name (as ctypes.CDLL("./libfoo.so") does): the loader keeps
// that name, which tleak could not open (it was skipped, and the plugin's frames read "??"); the
// agent names the file the kernel mapped instead.
TEST_F(ProgramRun, APluginLoadedByARelativeNameIsStillNamed) {
  std::string plugin = std::filesystem::relative(program("libdlopen_plugin.so")).string();
  if (plugin.find('/') == std::string::npos) plugin = "./" + plugin;
  ASSERT_NE(plugin[0], '/');
  const auto r = tleak_run({}, {program("dlopen_churn"), plugin});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "objects one more while loaded, as before after\n");
  const Json& s = site_at(at("dlopen_plugin.c", "PLUGIN"));
  EXPECT_EQ(s["allocations"], 100);
  EXPECT_EQ(s["frames"][0]["function"], "plugin_make");
  EXPECT_EQ(s["frames"][0]["module"], "libdlopen_plugin.so");
}

// A plugin whose file another build replaced while the program ran (tests/programs/plugin_replaced.c):
// its frames are not named from the new file's symbols, which describe other code, but by their place
// in the module, and a note says why, in the JSON and in the text.
TEST_F(ProgramRun, APluginReplacedSinceTheRunIsNamedByPlaceAndANoteSaysWhy) {
  std::filesystem::copy_file(program("libframe_plugin_8.so"), path("plugin.so"));
  std::filesystem::copy_file(program("libframe_plugin_104.so"), path("next.so"));
  const auto r = tleak_run({}, {program("plugin_replaced"), path("plugin.so"), path("next.so")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "replaced\n");
  const std::string note =
      "the symbols of 1 module could not be read, so its frames are named by their place in it: plugin.so changed "
      "since the run";
  EXPECT_EQ(report_["notes"], Json::array({note}));
  EXPECT_NE(r.err.find("note: " + note), std::string::npos) << r.err;
  EXPECT_EQ(report_["totals"]["leaked_bytes"], 700);
  const Json* lost = nullptr;
  for (const Json& s : report_["sites"]) {
    if (s["leaked_bytes"] == 700) lost = &s;
  }
  ASSERT_NE(lost, nullptr) << report_["sites"].dump(1).substr(0, 4000);
  const Json& frames = (*lost)["frames"];
  EXPECT_EQ(frames[0]["function"], "?? (plugin.so changed since the run)");
  EXPECT_EQ(frames[0]["module"], "plugin.so");
  EXPECT_EQ(frames[1]["function"], "main");
  EXPECT_EQ(frames[1]["line"], line_of("plugin_replaced.c", "LOST"));
  EXPECT_EQ((*lost)["label"].get<std::string>().rfind("plugin.so+0x", 0), 0u) << (*lost)["label"];
}

// Allocations in inlined library code (std::vector at -O2) are named by the function that holds
// the code and that function's own line, where it called the inlined code; the functions inlined
// there come before it, as addr2line -i reads them from the debug info.
TEST_F(ProgramRun, InlinedAllocationsAreAtTheirFunctionsOwnLine) {
  const Json& row = inlined_rows_growing({});
  const Json& frames = row["frames"];
  // operator new (libstdc++), the library's functions inlined into grow_rows, innermost first,
  // then grow_rows itself.
  ASSERT_GE(frames.size(), 3u);
  EXPECT_EQ(frames[0]["function"], "operator new(unsigned long)") << frames.dump();
  std::size_t own = 1;
  // (Their names carry their classes where the debug info has them: clang's line tables only name
  // "allocate" alone.)
  for (; own < frames.size() && frames[own]["kind"] == "inlined"; ++own) {
    EXPECT_NE(frames[own]["function"], "??") << frames[own].dump();
    EXPECT_TRUE(frames[own]["file"].get<std::string>().find("/include/c++/") != std::string::npos) << frames[own].dump();
  }
  ASSERT_GT(own, 1u) << "no inlined frames: " << frames.dump();
  ASSERT_LT(own, frames.size()) << frames.dump();
  EXPECT_EQ(frames[own]["function"], "grow_rows(int)") << frames.dump();
  EXPECT_EQ(frames[own]["kind"], "native");
  EXPECT_TRUE(frames[own]["file"].get<std::string>().ends_with("inlined_alloc.cc")) << frames.dump();
  EXPECT_EQ(frames[own]["line"], line_of("inlined_alloc.cc", "ROW"));
  // The outermost inlined call is the one grow_rows made, at the same address.
  EXPECT_TRUE(frames[own - 1]["function"].get<std::string>().find("emplace_back<") != std::string::npos)
      << frames[own - 1].dump();
  for (std::size_t i = 1; i < own; ++i) EXPECT_EQ(frames[i]["offset"], frames[own]["offset"]);
  // The label and the text name grow_rows, not the library.
  EXPECT_EQ(row["label"], "grow_rows " + std::string("(") + at("inlined_alloc.cc", "ROW"));

  // The same chain as binutils' addr2line reads it at the call (the byte before the return address):
  // a function and a file:line per line pair, the inlined ones innermost first, then grow_rows. Its
  // names are demangled here as tleak demangles them (libstdc++'s demangler): binutils' own renders
  // some templates' expressions differently ("(std::declval<int>)()" for "std::declval<int>()").
  char call[32];
  std::snprintf(call, sizeof call, "0x%llx", static_cast<unsigned long long>(frames[own]["offset"].get<std::uint64_t>() - 1));
  const auto addr2line = run_process("/usr/bin/addr2line", {"-i", "-f", "-e", program("inlined_alloc"), call});
  ASSERT_EQ(addr2line.exit_code, 0) << addr2line.err;
  std::vector<std::string> lines;
  for (std::size_t from = 0; from < addr2line.out.size();) {
    const std::size_t end = addr2line.out.find('\n', from);
    lines.push_back(addr2line.out.substr(from, end - from));
    from = end == std::string::npos ? addr2line.out.size() : end + 1;
  }
  ASSERT_EQ(lines.size(), 2 * own) << addr2line.out << "\nagainst " << frames.dump();
  for (std::size_t i = 1; i <= own; ++i) {
    const std::string& place = lines[2 * (i - 1) + 1];
    const std::string expected_place = frames[i]["file"].get<std::string>() + ":" + std::to_string(frames[i]["line"].get<int>());
    EXPECT_EQ(place, expected_place) << "frame " << i;
    if (i < own) {
      EXPECT_EQ(demangled(lines[2 * (i - 1)]), frames[i]["function"]) << "frame " << i;
    }
  }
  // tleak names the frame not inlined from the symbol table, parameters included; addr2line from the
  // debug info, where gcc gives a static function no linkage name, only "grow_rows".
  const std::string outer = demangled(lines[2 * (own - 1)]);
  EXPECT_TRUE(outer == "grow_rows(int)" || outer == "grow_rows") << outer;
}

// A report written before tleak named inlined frames (`95f9ad1`), of the same program, diffed
// against today's (a baseline kept by `tleak check --baseline`): its C++ sites had no inlined frames,
// and their physical frame's line was the inlined code's own. Every site matches its own.
TEST_F(ProgramRun, AReportWithoutInlinedFramesDiffsAgainstOneWithThem) {
  inlined_rows_growing({});
  Json older = report_;
  std::size_t rewritten = 0;
  for (Json& site : older["sites"]) {
    Json frames = Json::array();
    std::vector<const Json*> inlined;
    for (const Json& f : site["frames"]) {
      if (f["kind"] == "inlined") {
        inlined.push_back(&f);
        continue;
      }
      Json physical = f;
      if (!inlined.empty()) {
        // The line libdw gives the address without inlined frames: the innermost inlined code's.
        physical["file"] = (*inlined.front())["file"];
        physical["line"] = (*inlined.front())["line"];
        ++rewritten;
      }
      inlined.clear();
      frames.push_back(physical);
    }
    site["frames"] = frames;
  }
  ASSERT_GT(rewritten, 0u) << "no inlined frames in " << report_["sites"].dump();
  const Json diff = diff_of_older(older);
  EXPECT_EQ(diff["sites"].size(), report_["sites"].size()) << diff.dump();
  for (const Json& s : diff["sites"]) EXPECT_EQ(s["status"], "unchanged") << s.dump();
}

// Two modules with debug info, each allocating in code inlined in its first compile unit: each
// frame's inlined calls and own line come from its own module (the symbolizer's tables of a unit
// had been keyed by the unit's offset, which both first units share).
TEST_F(ProgramRun, InlinedCallsAreReadFromTheirOwnModule) {
  const auto r = tleak_run({}, {program("inlined_two_modules")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "rows 30 30\n");
  const struct {
    std::string source, marker, function, module;
    double slope;
  } expected[] = {{"inlined_two_modules.cc", "ROW", "grow_rows(int)", "inlined_two_modules", 4000.0},
                  {"inlined_rows_lib.cc", "LIB_ROW", "lib_grow_rows", "libinlined_rows_lib.so", 2000.0}};
  for (const auto& e : expected) {
    const Json& row = site_at(at(e.source, e.marker));
    EXPECT_EQ(row["verdict"], "growth");
    EXPECT_NEAR(row["growth"]["slope_bytes_per_iteration"].get<double>(), e.slope, 1.0);
    const Json& frames = row["frames"];
    std::size_t own = 1;
    while (own < frames.size() && frames[own]["kind"] == "inlined") ++own;
    ASSERT_LT(own, frames.size()) << frames.dump();
    EXPECT_GT(own, 1u) << e.source << ": no inlined frames: " << frames.dump();
    EXPECT_EQ(frames[own]["function"], e.function) << frames.dump();
    EXPECT_EQ(frames[own]["module"], e.module) << frames.dump();
    EXPECT_TRUE(frames[own]["file"].get<std::string>().ends_with(e.source)) << frames.dump();
    EXPECT_EQ(frames[own]["line"], line_of(e.source, e.marker)) << frames.dump();
    EXPECT_TRUE(frames[own - 1]["function"].get<std::string>().find("emplace_back<") != std::string::npos)
        << frames[own - 1].dump();
  }
}

// One line of C++ that allocates twice inside the C++ library (a map caching a vector: the tree's
// node and the vector's copied storage) makes two growing sites whose shown frames read alike: the
// text says which is which by the library frame each has and the other lacks.
TEST_F(ProgramRun, TwoAllocationsOfOneLineInTheCxxLibrarySayWhichIsWhich) {
  const auto r = tleak_run({}, {program("map_cache")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "cached 100\n");
  const std::string label = "remember " + std::string("(") + at("map_cache.cc", "CACHE");
  std::map<std::string, double> slope_by_via;
  for (std::size_t at = r.err.find("  growth   " + label); at != std::string::npos;
       at = r.err.find("  growth   " + label, at + 1)) {
    const std::size_t reason = r.err.find('\n', at) + 1, via = r.err.find('\n', reason) + 1;
    const std::string line = r.err.substr(via, r.err.find('\n', via) - via);
    slope_by_via[line] = 0;
  }
  for (const Json& site : report_["sites"]) {
    if (site["verdict"] != "growth" || site["label"] != label) continue;
    bool vector_storage = false;
    for (const Json& f : site["frames"]) vector_storage = vector_storage || f["function"].get<std::string>().find("_Vector_base") != std::string::npos;
    const std::string via = vector_storage ? "           via _Vector_base::_M_allocate  stl_vector.h:378  (inlined)"
                                           : "           via _Rb_tree::_M_get_node  stl_tree.h:561  (inlined)";
    ASSERT_EQ(slope_by_via.count(via), 1u) << via << "\n" << r.err;
    slope_by_via[via] = site["growth"]["slope_bytes_per_iteration"].get<double>();
  }
  ASSERT_EQ(slope_by_via.size(), 2u) << r.err;
  // 256 floats copied; a node of the tree's header (32 B), the key (padded to 8) and the vector's
  // three pointers: 64 B asked of operator new (sizeof the node, as g++ 12 gives it), and counted as asked.
  EXPECT_NEAR(slope_by_via["           via _Vector_base::_M_allocate  stl_vector.h:378  (inlined)"], 1024.0, 1.0) << r.err;
  EXPECT_NEAR(slope_by_via["           via _Rb_tree::_M_get_node  stl_tree.h:561  (inlined)"], 64.0, 1.0) << r.err;
}

// Two equal calls on one line of C++ (tests/programs/calls_on_one_line.cc) make two growing sites
// whose stacks differ only in where on the line each call is: the column each native frame's debug
// info gives. The text quotes each call with its column; `tleak diff` keeps them apart and labels
// each with its column; a report without native columns (an older tleak's) matches them as one
// line, nothing new or gone.
TEST_F(ProgramRun, TwoCallsOnOneLineOfCxxAreToldApartByTheirColumns) {
  const auto r = tleak_run({}, {program("calls_on_one_line")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "kept 100 and 100\n");
  const int keep = line_of("calls_on_one_line.cc", "KEEP");
  std::string source_line;
  {
    std::ifstream in(std::string(TLEAK_SOURCE_DIR) + "/tests/programs/calls_on_one_line.cc");
    for (int n = 0; n < keep; ++n) std::getline(in, source_line);
  }
  // Where each call is on the line: from its "std::make_unique" to its ")".
  const std::size_t first_call = source_line.find("std::make_unique"), second_call = source_line.rfind("std::make_unique");
  ASSERT_NE(first_call, second_call);
  const std::string label = "main (" + at("calls_on_one_line.cc", "KEEP");
  std::vector<int> columns;
  for (const Json& site : report_["sites"]) {
    if (site["label"] != label) continue;
    EXPECT_EQ(site["verdict"], "growth");
    EXPECT_EQ(site["growth"]["slope_bytes_per_iteration"], 96.0);
    for (const Json& f : site["frames"]) {
      if (f["function"] == "main" && f["line"] == keep) columns.push_back(f.value("column", 0));
    }
  }
  ASSERT_EQ(columns.size(), 2u) << report_["sites"].dump();
  std::sort(columns.begin(), columns.end());
  const std::size_t first_end = source_line.find(')', first_call), second_end = source_line.find(')', second_call);
  EXPECT_GE(columns[0] - 1, static_cast<int>(first_call));
  EXPECT_LE(columns[0] - 1, static_cast<int>(first_end));
  EXPECT_GE(columns[1] - 1, static_cast<int>(second_call));
  EXPECT_LE(columns[1] - 1, static_cast<int>(second_end));
  for (const int column : columns) {
    const std::string via = "           via std::make_unique<Node>()  calls_on_one_line.cc:" + std::to_string(keep) + ":" +
                            std::to_string(column) + "\n";
    EXPECT_NE(r.err.find(via), std::string::npos) << via << r.err;
  }
  // The saved report reads the same, its via lines quoted again from the file.
  const auto text = run_process(TLEAK_BINARY, {"view", path("report.json"), "--format", "text"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(r.err, text.out + "report: " + path("report.json") + "\n");

  const auto same = run_process(TLEAK_BINARY, {"diff", path("report.json"), path("report.json"), "--format", "json"});
  ASSERT_EQ(same.exit_code, 0) << same.err;
  const Json same_diff = Json::parse(same.out);
  std::vector<std::string> labels;
  for (const Json& s : same_diff["sites"]) {
    if (s["label"].get<std::string>().starts_with("main (calls_on_one_line.cc:" + std::to_string(keep))) labels.push_back(s["label"]);
  }
  std::sort(labels.begin(), labels.end());
  const std::string at_line = "main (calls_on_one_line.cc:" + std::to_string(keep) + ":";
  EXPECT_EQ(labels, (std::vector<std::string>{at_line + std::to_string(columns[0]) + ")",
                                              at_line + std::to_string(columns[1]) + ")"}));

  Json older = report_;
  for (Json& site : older["sites"]) {
    for (Json& f : site["frames"]) f.erase("column");
  }
  diff_of_older(older);
}

// C++ under jemalloc, whose operator new never reaches malloc: recorded at operator new, from
// the function that called it (the agent's own operator new is no frame of the program's).
TEST_F(ProgramRun, CppNewUnderAPreloadedMallocIsRecordedAtItsCaller) {
  SKIP_WITHOUT_JEMALLOC();
  const Json& row = inlined_rows_growing({"LD_PRELOAD=" + kJemalloc});
  // The first frame not inlined (the library's inlined into grow_rows come before it).
  const Json& frames = row["frames"];
  std::size_t own = 0;
  while (own < frames.size() && frames[own]["kind"] == "inlined") ++own;
  ASSERT_LT(own, frames.size()) << frames.dump();
  EXPECT_EQ(frames[own]["function"], "grow_rows(int)") << frames.dump();
  for (const Json& s : report_["sites"]) {
    for (const Json& f : s["frames"]) EXPECT_NE(f["module"], "libtleak_preload.so") << s["frames"].dump();
  }
  EXPECT_EQ(report_["totals"]["leaked_bytes"], 0);
}

// A C program that loads a C++ plugin RTLD_LOCAL, as Python loads its C++ extensions: libstdc++ is
// not in the global scope, and the agent's operator new finds it without the program seeing a
// trace of the search (its dlerror() still says nothing happened). The plugin's rows are at their
// line, and what is lost is what memcheck says is lost (the loader's lists included: a block the
// search allocated unrecorded once made the program's own dlopen list read lost).
TEST_F(ProgramRun, CppNewInAPluginLoadedLocallyIsSeenAndLeavesNoTrace) {
  const std::string plugin = program("liblocal_cxx_plugin.so");
  const auto plain = run_process(program("local_cxx_host"), {plugin});
  ASSERT_EQ(plain.out, "rows 30, dlerror: none\n");
  const auto r = tleak_run({}, {program("local_cxx_host"), plugin});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, plain.out);
  const std::string line = "local_cxx_plugin.cc:" + std::to_string(line_of("local_cxx_plugin.cc", "ROW")) + ")";
  std::int64_t leaked_at_rows = 0;
  for (const Json& s : report_["sites"]) {
    if (s["label"].get<std::string>().ends_with(line)) leaked_at_rows += s["leaked_bytes"].get<std::int64_t>();
  }
  // 30 vectors (24 bytes each) and their buffers of 100 ints, lost once the static list that
  // held them is destroyed at exit.
  EXPECT_EQ(leaked_at_rows, 30 * (24 + 400));
  const auto m = run_process(VALGRIND_PROGRAM, {"--leak-check=full", program("local_cxx_host"), plugin});
  ASSERT_EQ(m.exit_code, 0) << m.err;
  EXPECT_EQ(report_["totals"]["leaked_bytes"],
            memcheck_figure(m.err, "definitely lost") + memcheck_figure(m.err, "indirectly lost"))
      << m.err;
}

// An allocation from a stack new to its thread goes out with the stack (agent::SiteRecord): a mark
// made by another thread while the thread waits counts it, the thread's next allocation from that
// stack, named by its cache slot, lands in the same site, and its frees are all counted.
TEST_F(ProgramRun, AStackNewToItsThreadCountsAtAMarkAnotherThreadMakes) {
  const auto r = tleak_run({}, {program("new_stack_at_mark")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto sites_at = [this](const std::string& line) {
    std::vector<Json> found;
    for (const Json& s : report_["sites"]) {
      if (s["label"].get<std::string>().ends_with(line)) found.push_back(s);
    }
    return found;
  };
  const auto first = sites_at(at("new_stack_at_mark.c", "FIRST"));
  ASSERT_EQ(first.size(), 1u) << report_["sites"].dump();
  EXPECT_EQ(first[0]["allocations"], 2);
  EXPECT_EQ(first[0]["frees"], 2);
  EXPECT_EQ(first[0]["peak_live_bytes"], 200);
  EXPECT_EQ(first[0]["live_bytes_at_samples"], Json::array({100}));
  const auto early = sites_at(at("new_stack_at_mark.c", "EARLY"));
  ASSERT_EQ(early.size(), 1u);
  EXPECT_EQ(early[0]["allocations"], 20);
  EXPECT_EQ(early[0]["frees"], 20);
  EXPECT_EQ(early[0]["live_bytes_at_samples"], Json::array({640}));
  const auto second = sites_at(at("new_stack_at_mark.c", "SECOND"));
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0]["allocations"], 1);
  EXPECT_EQ(second[0]["frees"], 1);
  EXPECT_EQ(report_["totals"]["leaked_bytes"], 0);
  EXPECT_EQ(report_["totals"]["allocations"].get<std::int64_t>() - report_["totals"]["frees"].get<std::int64_t>(),
            report_["totals"]["reachable_at_exit_blocks"].get<std::int64_t>());
}

// More call sites than a thread's cache of stacks holds, taken in turn: the agent forgets each
// stack before it comes round again and sends it again under another slot (8,719 site records for
// these 9,000 allocations, in the profile build), and tleak still gives each stack one site.
TEST_F(ProgramRun, AStackSentAgainAfterItsThreadForgotItIsTheSameSite) {
  const auto r = tleak_run({"--max-sites", "10000000"}, {program("many_call_sites"), "3000", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::set<std::string> stacks;
  std::size_t sites = 0;
  for (const Json& s : report_["sites"]) {
    if (!s["label"].get<std::string>().ends_with(at("many_call_sites.c", "ALLOC"))) continue;
    ++sites;
    EXPECT_EQ(s["allocations"], 3) << s.dump();
    EXPECT_EQ(s["frees"], 3);
    ASSERT_GE(s["frames"].size(), 2u);
    stacks.insert(s["frames"][1]["module"].get<std::string>() + "+" + std::to_string(s["frames"][1]["offset"].get<std::int64_t>()));
  }
  EXPECT_EQ(sites, 3000u);
  EXPECT_EQ(stacks.size(), 3000u);  // one call site each
}

// More threads alive at once than the agent has buffers: those that found one are recorded exactly,
// the rest are counted in a note (4,200 threads and the main thread, 4,096 buffers: 105 without).
TEST_F(ProgramRun, ThreadsBeyondTheAgentsBuffersAreCountedInANote) {
  const auto r = tleak_run({}, {program("many_threads_at_once"), "4200"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "4200 threads done\n");
  const Json& each = site_at(at("many_threads_at_once.c", "EACH"));
  EXPECT_EQ(each["allocations"], 4095);
  EXPECT_EQ(each["frees"], 4095);
  EXPECT_EQ(each["final_live_bytes"], 0);
  ASSERT_EQ(report_["notes"].size(), 1u) << report_["notes"].dump();
  EXPECT_EQ(report_["notes"][0].get<std::string>().rfind("105 of the program's threads allocated while all 4096", 0), 0u)
      << report_["notes"][0];
}

// A wrapper script whose work is done by a child: the child is not recorded (README, "fork"),
// and the report says so instead of reading as if nothing had happened. Forked copies that did
// not exec are counted too (the 50 of fork_under_threads: seen by hand, "at least 50 ... x24, ...").
TEST_F(ProgramRun, ProcessesTheProgramStartsAreNamedInANote) {
  const std::string script = path("wrapper.sh");
  std::ofstream(script) << "#!/bin/sh\n" << program("growth") << " leaky\necho after\n";
  ASSERT_EQ(chmod(script.c_str(), 0755), 0);
  const auto r = tleak_run({}, {script});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "growth leaky done\nafter\n");
  std::string notes = report_["notes"].dump();
  EXPECT_NE(notes.find("the program started at least 1 other process (growth), which tleak does not record"),
            std::string::npos) << notes;
  // Its one program, named the way --record takes it.
  EXPECT_NE(notes.find("or name its program: --record growth"), std::string::npos) << notes;
  // A forked child that did not exec (it exits 7: tleak says the program failed, with 3).
  ASSERT_EQ(tleak_run({}, {program("resize_fork")}).exit_code, 3);
  notes = report_["notes"].dump();
  EXPECT_NE(notes.find("started at least 1 other process (resize_fork (forked, did not exec)), which tleak does not "
                       "record: it records the process it starts and the programs that process execs, not the copies "
                       "of itself it forks (what they allocate after the fork is not seen); to diagnose their work, "
                       "record the first of them that allocates (--record-fork), or run it in the program's own "
                       "process (a PyTorch DataLoader with num_workers=0, a pool's function called directly)\""),
            std::string::npos)
      << notes;
  // Python's subprocess closes the descriptors a child inherits: found through tleak's own.
  const std::string python_script = path("spawns.py");
  std::ofstream(python_script) << "import subprocess\nsubprocess.run(['/bin/true'], check=True)\n";
  ASSERT_EQ(tleak_run({}, {TLEAK_PYTHON, python_script}).exit_code, 0);
  notes = report_["notes"].dump();
  EXPECT_NE(notes.find("started at least 1 other process (true)"), std::string::npos) << notes;
  // A program that starts none has no such note.
  ASSERT_EQ(tleak_run({}, {program("growth"), "leaky"}).exit_code, 0);
  EXPECT_EQ(report_["notes"].dump().find("other process"), std::string::npos);
}

TEST_F(ProgramRun, MaxSitesListsEveryFindingAndTheLargestBoundedSites) {
  ASSERT_EQ(tleak_run({}, {program("growth"), "leaky"}).exit_code, 0);
  const Json all = report_;
  std::vector<std::int64_t> bounded_peaks;
  for (const Json& s : all["sites"]) {
    if (s["verdict"] == "bounded") bounded_peaks.push_back(s["peak_live_bytes"].get<std::int64_t>());
  }
  ASSERT_GE(bounded_peaks.size(), 2u);  // something to leave out
  std::sort(bounded_peaks.rbegin(), bounded_peaks.rend());

  // The limit counts every listed site, findings first: the growth site and the largest bounded one.
  ASSERT_EQ(tleak_run({"--max-sites", "2"}, {program("growth"), "leaky"}).exit_code, 0);
  int findings = 0, bounded = 0;
  for (const Json& s : report_["sites"]) {
    if (s["verdict"] == "bounded") {
      ++bounded;
      EXPECT_EQ(s["peak_live_bytes"], bounded_peaks[0]);
    } else {
      ++findings;
    }
  }
  EXPECT_EQ(findings, static_cast<int>(all["sites"].size() - bounded_peaks.size()));
  EXPECT_EQ(bounded, 1);
  EXPECT_EQ(report_["omitted_sites"]["sites"], bounded_peaks.size() - 1);
  EXPECT_EQ(report_["omitted_sites"]["largest_peak_live_bytes"], bounded_peaks[1]);
  EXPECT_EQ(report_["totals"], all["totals"]);

  for (const std::string bad : {"0", "-1", "10000001", "many"}) {
    const auto r = tleak_run({"--max-sites", bad}, {program("growth"), "leaky"});
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_NE(r.err.find("--max-sites"), std::string::npos) << r.err;
  }
}

// A --focus longer than the agent compares file names (tleak/agent/protocol.h's
// kMaxPythonFocusBytes, 511 bytes) is refused before the program starts, not dropped by the agent
// while the report's labels used it.
TEST_F(ProgramRun, AFocusLongerThanTheAgentComparesIsRefused) {
  const auto refused = tleak_run({"--focus", "/" + std::string(511, 'a')}, {"/bin/echo", "ran"});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_EQ(refused.out, "");  // the program never ran
  EXPECT_NE(refused.err.find("--focus is 512 bytes long, at most 511"), std::string::npos) << refused.err;
  EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << refused.err;
  EXPECT_FALSE(std::filesystem::exists(path("report.json")));
  const auto taken = tleak_run({"--focus", "/" + std::string(510, 'a')}, {"/bin/echo", "ran"});
  EXPECT_EQ(taken.exit_code, 0) << taken.err;
  EXPECT_EQ(taken.out, "ran\n");
}

}  // namespace
}  // namespace tleak::program_tests
