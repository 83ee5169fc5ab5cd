// The fixture of the tests that run real programs under `tleak run -- COMMAND` (the test programs of
// tests/programs, each with its expected findings in its header comment, real python3 with numpy and
// PyTorch, and memcheck beside it), and the helpers they share.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <spawn.h>
#include <sys/wait.h>
#include <cxxabi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <thread>

#include "process.h"

namespace tleak::program_tests {

using tleak::testing::run_process;
using Json = nlohmann::json;

inline std::string program(const std::string& name) { return std::string(TLEAK_PROGRAMS_DIR) + "/" + name; }

// A linkage name as libstdc++ demangles it; any other name (a C function's, a DWARF name) as it is.
inline std::string demangled(const std::string& name) {
  if (name.rfind("_Z", 0) != 0) return name;
  int status = 0;
  char* readable = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (readable == nullptr) return name;
  std::string out = readable;
  std::free(readable);
  return out;
}

// jemalloc, as users preload it (Debian's libjemalloc2, which scripts/setup installs).
inline const std::string kJemalloc = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";

#define SKIP_WITHOUT_JEMALLOC() \
  if (!std::filesystem::exists(kJemalloc)) GTEST_SKIP() << "libjemalloc2 is not installed (scripts/setup installs it)"

// A fresh directory for one test's reports.
class ProgramRun : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tleak-program-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // Set by a test whose program defines malloc itself (tleak_run otherwise fails on the note).
  bool malloc_of_its_own_ = false;

  // tleak run [options] -o REPORT -- command...; returns the process result, fills report_.
  // `env`: NAME=VALUE settings tleak is started with (and so the program).
  tleak::testing::ProcessResult tleak_run(const std::vector<std::string>& options,
                                          const std::vector<std::string>& command,
                                          const std::vector<std::string>& env = {}) {
    std::vector<std::string> launcher;
    if (!env.empty()) {
      launcher = {"/usr/bin/env"};
      launcher.insert(launcher.end(), env.begin(), env.end());
    }
    return tleak_run_via(launcher, options, command);
  }
  // The same, tleak started by `launcher` (a program and its arguments, tleak's path after them).
  tleak::testing::ProcessResult tleak_run_via(const std::vector<std::string>& launcher,
                                              const std::vector<std::string>& options,
                                              const std::vector<std::string>& command) {
    std::vector<std::string> args;
    if (!launcher.empty()) {
      args.assign(launcher.begin() + 1, launcher.end());
      args.push_back(TLEAK_BINARY);
    }
    args.push_back("run");
    args.insert(args.end(), options.begin(), options.end());
    args.insert(args.end(), {"-o", path("report.json"), "--"});
    args.insert(args.end(), command.begin(), command.end());
    auto result = run_process(launcher.empty() ? std::string(TLEAK_BINARY) : launcher.front(), args);
    report_ = Json();
    if (std::filesystem::exists(path("report.json"))) {
      report_ = Json::parse(std::ifstream(path("report.json")));
      // Every report a test makes: the schema and the invariants (tests/validate_report.py).
      const auto v = run_process("/usr/bin/python3", {std::string(TLEAK_SOURCE_DIR) + "/tests/validate_report.py",
                                                      std::string(TLEAK_SOURCE_DIR) + "/schema/tleak.report.schema.json",
                                                      path("report.json")});
      EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
      // No program but one that means to defines malloc itself: python3.11, built without -pie, has
      // undefined symbols for malloc and free that the loader finds first (their PLT entries).
      if (!malloc_of_its_own_) {
        for (const Json& note : report_["notes"]) {
          EXPECT_EQ(note.get<std::string>().find("ahead of tleak's agent in the loader's order"), std::string::npos)
              << note;
        }
      }
    }
    return result;
  }

  // Refused in one line naming the problem (`words`), exit 2, no report.
  void expect_refused(const tleak::testing::ProcessResult& r, const std::string& words) const {
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(words), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(std::filesystem::exists(path("report.json")));
  }

  // A test program's standard output under `tleak run` (exit 0) and run plain (exit 0).
  void expect_output_recorded_and_plain(const std::string& name, const std::string& recorded, const std::string& plain) {
    const auto r = tleak_run({}, {program(name)});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, recorded);
    const auto p = run_process(program(name), {});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_EQ(p.out, plain);
  }

  // `tleak diff --format json` of `older` (written beside the report) against the report: a report
  // of an older tleak, which must match every site of the newer one (nothing new, nothing gone).
  Json diff_of_older(const Json& older) const {
    std::ofstream(path("older.json")) << older.dump();
    const auto d = tleak::testing::run_process(TLEAK_BINARY, {"diff", path("older.json"), path("report.json"), "--format", "json"});
    EXPECT_EQ(d.exit_code, 0) << d.err;
    Json diff = Json::parse(d.out);
    EXPECT_EQ(diff["counts"]["new"], 0) << d.out;
    EXPECT_EQ(diff["counts"]["gone"], 0) << d.out;
    return diff;
  }

  // The report's one note, which begins with `start`.
  void expect_one_note_starting(const std::string& start) const {
    ASSERT_EQ(report_["notes"].size(), 1u) << report_["notes"];
    EXPECT_EQ(report_["notes"][0].get<std::string>().rfind(start, 0), 0u) << report_["notes"][0];
  }

  // The site whose label ends with `where` (e.g. "growth.c:22)"); fails the test if none.
  const Json& site_at(const std::string& where) const {
    for (const Json& s : report_["sites"]) {
      const std::string label = s["label"];
      if (label.size() >= where.size() && label.compare(label.size() - where.size(), where.size(), where) == 0) {
        return s;
      }
    }
    ADD_FAILURE() << "no site at " << where << " in\n" << report_["sites"].dump(1).substr(0, 4000);
    static const Json none = Json::object();
    return none;
  }

  // The line of `marker` (a comment like /* KEEP */) in a test program's source.
  static int line_of(const std::string& source, const std::string& marker) {
    std::ifstream in(std::string(TLEAK_SOURCE_DIR) + "/tests/programs/" + source);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      if (line.find("/* " + marker + " */") != std::string::npos || line.find("# " + marker) != std::string::npos) {
        return n;
      }
    }
    ADD_FAILURE() << marker << " not in " << source;
    return 0;
  }
  static std::string at(const std::string& source, const std::string& marker) {
    return source + ":" + std::to_string(line_of(source, marker)) + ")";
  }

  // tests/programs/exit_reachability.c's report: what is lost, and how, and what is reachable.
  void expect_exit_reachability_figures() const;

  // tests/programs/inlined_alloc.cc run by tleak (with `env`): its own output, and its ROW site
  // (returned) growing by 4,000 bytes an iteration.
  const Json& inlined_rows_growing(const std::vector<std::string>& env) {
    const auto r = tleak_run({}, {program("inlined_alloc")}, env);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "rows 30\n");
    const Json& row = site_at(at("inlined_alloc.cc", "ROW"));
    EXPECT_EQ(row["verdict"], "growth");
    EXPECT_NEAR(row["growth"]["slope_bytes_per_iteration"].get<double>(), 4000.0, 1.0);
    return row;
  }

  std::filesystem::path dir_;
  Json report_;
};

// The number `pattern`'s group matched in memcheck's log (it writes "1,000"), or -1.
inline std::int64_t memcheck_number(const std::string& log, const std::regex& pattern) {
  std::smatch m;
  if (!std::regex_search(log, m, pattern)) return -1;
  std::string digits = m[1];
  digits.erase(std::remove(digits.begin(), digits.end(), ','), digits.end());
  return std::stoll(digits);
}

// Bytes, and blocks, in one line of memcheck's summary ("definitely lost: 1,000 bytes in 1 blocks").
inline std::int64_t memcheck_figure(const std::string& log, const std::string& what) {
  return memcheck_number(log, std::regex(what + ": ([0-9,]+) bytes"));
}

inline std::int64_t memcheck_blocks(const std::string& log, const std::string& what) {
  return memcheck_number(log, std::regex(what + ": [0-9,]+ bytes in ([0-9,]+) blocks"));
}

// Runs `command` (a test program and its arguments) under memcheck, which must let it end with
// `exit_code` (128 + N: killed by signal N), and expects memcheck's definitely + indirectly lost
// bytes to be `lost`: the figure tleak's leaked bytes are held to.
inline void expect_memcheck_loses(const std::vector<std::string>& command, std::int64_t lost, int exit_code = 0) {
  std::vector<std::string> args = {"--leak-check=full"};
  args.insert(args.end(), command.begin(), command.end());
  const auto m = tleak::testing::run_process(VALGRIND_PROGRAM, args);
  ASSERT_EQ(m.exit_code, exit_code) << m.err;
  EXPECT_EQ(memcheck_figure(m.err, "definitely lost") + memcheck_figure(m.err, "indirectly lost"), lost) << m.err;
}

// The agent walks an allocating thread's stack itself where it can follow every frame, and leaves
// the stack to libunwind otherwise (agent/src/fast_unwind.h). With TLEAK_AGENT_CHECK_UNWIND=1 it
// walks each stack both ways and prints "unwind check: N stacks, L by libunwind, D differed".
struct UnwindCheck {
  long stacks = -1, by_libunwind = -1, differed = -1;
};

inline UnwindCheck unwind_check_of(const std::string& err) {
  UnwindCheck c;
  std::smatch m;
  if (std::regex_search(err, m, std::regex(R"(unwind check: (\d+) stacks, (\d+) by libunwind, (\d+) differed)"))) {
    c = {std::stol(m[1]), std::stol(m[2]), std::stol(m[3])};
  }
  return c;
}

}  // namespace tleak::program_tests
