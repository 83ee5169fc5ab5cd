// A program whose separate debug info is compressed (objcopy --compress-debug-sections, as Debian's
// -dbg packages ship it) is read from an uncompressed copy tleak keeps by build ID
// (allocators/src/debuginfo_cache.h): made on the first run, used on the next, made again when
// damaged, the least recently used removed past the size limit, none with TLEAK_CACHE_DIR empty.
// Every run must name the program's lines exactly as the compressed file does.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "process.h"

namespace {

namespace fs = std::filesystem;
using tleak::testing::run_process;
using Json = nlohmann::json;

class DebuginfoCache : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tleak-debuginfo-cache-test-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    // The program without its debug info, which goes to growth.debug (compressed), named by its
    // .gnu_debuglink; its build ID stays.
    shell("cd " + dir_.string() + " && objcopy --only-keep-debug --compress-debug-sections=zlib " + program() +
          " growth.debug && objcopy --strip-debug --add-gnu-debuglink=growth.debug " + program() + " growth");
    const auto notes = run_process("/usr/bin/readelf", {"-n", path("growth")});
    std::smatch id;
    ASSERT_TRUE(std::regex_search(notes.out, id, std::regex("Build ID: ([0-9a-f]+)"))) << notes.out;
    copy_ = dir_ / "cache" / "debuginfo" / (id[1].str() + ".debug");
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::string program() { return std::string(TLEAK_PROGRAMS_DIR) + "/growth"; }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  static void shell(const std::string& command) {
    const auto r = run_process("/bin/sh", {"-c", command});
    ASSERT_EQ(r.exit_code, 0) << command << "\n" << r.err;
  }

  // tleak run on the stripped program with TLEAK_CACHE_DIR=`cache`: the program's frames carry
  // its file and lines (KEEP's site is growth.c's line of /* KEEP */ and grows 30 blocks).
  void run_and_expect_lines(const std::string& cache) {
    const auto r = run_process("/usr/bin/env", {"TLEAK_CACHE_DIR=" + cache, TLEAK_BINARY, "run", "-o",
                                                path("report.json"), "--", path("growth"), "leaky"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const Json report = Json::parse(std::ifstream(path("report.json")));
    int keep_sites = 0;
    for (const Json& s : report["sites"]) {
      const std::string label = s["label"];
      if (label.find("growth.c:" + std::to_string(keep_line())) == std::string::npos) continue;
      ++keep_sites;
      EXPECT_EQ(s["verdict"], "growth");
      EXPECT_EQ(s["allocations"], 30);
    }
    EXPECT_EQ(keep_sites, 1) << report["sites"].dump(1).substr(0, 3000);
  }
  static int keep_line() {
    std::ifstream in(std::string(TLEAK_SOURCE_DIR) + "/tests/programs/growth.c");
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      if (line.find("/* KEEP */") != std::string::npos) return n;
    }
    return 0;
  }
  // Whether readelf shows a section of `file` with the compressed flag.
  static bool has_compressed_section(const fs::path& file) {
    const auto r = run_process("/usr/bin/readelf", {"-S", "-W", file.string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return std::regex_search(r.out, std::regex(R"(\.debug_\w+\s+PROGBITS\s+\S+\s+\S+\s+\S+\s+\S+\s+[A-Z]*C)"));
  }

  fs::path dir_;
  fs::path copy_;  // where the copy of growth.debug goes
};

TEST_F(DebuginfoCache, TheFirstRunMakesAnUncompressedCopyTheNextReads) {
  ASSERT_TRUE(has_compressed_section(path("growth.debug")));  // what the copy spares libdw
  run_and_expect_lines((dir_ / "cache").string());
  ASSERT_TRUE(fs::exists(copy_));
  EXPECT_FALSE(has_compressed_section(copy_));
  EXPECT_GT(fs::file_size(copy_), fs::file_size(path("growth.debug")));
  // Every debug section holds what GNU objcopy inflates it to.
  shell("cd " + dir_.string() + " && objcopy --decompress-debug-sections growth.debug reference.debug");
  const auto sections = run_process("/usr/bin/readelf", {"-S", "-W", path("reference.debug")});
  int compared = 0;
  const std::regex debug_section(R"((\.debug_\w+))");
  for (std::sregex_iterator it(sections.out.begin(), sections.out.end(), debug_section), end; it != end; ++it) {
    const std::string name = (*it)[1];
    shell("cd " + dir_.string() + " && objcopy --dump-section " + name + "=ours" + name + " " + copy_.string() +
          " /dev/null && objcopy --dump-section " + name + "=theirs" + name + " reference.debug /dev/null");
    const auto bytes = [&](const std::string& file) {
      std::ifstream in(path(file), std::ios::binary);
      return std::string(std::istreambuf_iterator<char>(in), {});
    };
    EXPECT_EQ(bytes("ours" + name), bytes("theirs" + name)) << name;
    EXPECT_FALSE(bytes("ours" + name).empty()) << name;
    ++compared;
  }
  EXPECT_GE(compared, 4);  // info, abbrev, line, str at least
  // Its owner's alone, as a program's own debug info may be.
  EXPECT_EQ(fs::status(copy_).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);

  // Read, not made again: the copy is marked used and keeps its size; nothing else appears.
  const auto old = fs::last_write_time(copy_) - std::chrono::hours(24 * 365);
  fs::last_write_time(copy_, old);
  const auto size = fs::file_size(copy_);
  run_and_expect_lines((dir_ / "cache").string());
  EXPECT_GT(fs::last_write_time(copy_), old);
  EXPECT_EQ(fs::file_size(copy_), size);
  for (const auto& e : fs::directory_iterator(copy_.parent_path())) {
    EXPECT_EQ(e.path().extension(), ".debug") << e.path();  // no piece of a copy left behind
  }
}

TEST_F(DebuginfoCache, ADamagedCopyIsMadeAgain) {
  run_and_expect_lines((dir_ / "cache").string());
  ASSERT_TRUE(fs::exists(copy_));
  const auto size = fs::file_size(copy_);
  fs::resize_file(copy_, size / 3);
  run_and_expect_lines((dir_ / "cache").string());
  EXPECT_EQ(fs::file_size(copy_), size);

  // Another file under its name (another build's debug info): not read, replaced.
  fs::copy_file(std::string(TLEAK_PROGRAMS_DIR) + "/threads", copy_, fs::copy_options::overwrite_existing);
  run_and_expect_lines((dir_ / "cache").string());
  EXPECT_EQ(fs::file_size(copy_), size);
  EXPECT_FALSE(has_compressed_section(copy_));
}

TEST_F(DebuginfoCache, TheLeastRecentlyUsedCopiesMakeRoomPastTheLimit) {
  // Two copies of 600 MiB each (sparse: no disk taken) are over the 1 GiB limit with the new one:
  // the older goes, the newer stays.
  const fs::path directory = copy_.parent_path();
  fs::create_directories(directory);
  const fs::path older = directory / "00.debug", newer = directory / "01.debug";
  for (const fs::path& p : {older, newer}) {
    std::ofstream(p).close();
    fs::resize_file(p, std::uintmax_t{600} << 20);
  }
  // And a piece of a copy a run left as it stopped, hours ago: removed too.
  const fs::path piece = directory / ".00.1234.part";
  std::ofstream(piece) << "part";
  const auto now = fs::file_time_type::clock::now();
  fs::last_write_time(older, now - std::chrono::hours(48));
  fs::last_write_time(newer, now - std::chrono::hours(24));
  fs::last_write_time(piece, now - std::chrono::hours(3));
  run_and_expect_lines((dir_ / "cache").string());
  EXPECT_FALSE(fs::exists(piece));
  EXPECT_FALSE(fs::exists(older));
  EXPECT_TRUE(fs::exists(newer));
  EXPECT_TRUE(fs::exists(copy_));
}

TEST_F(DebuginfoCache, AnEmptyCacheDirectoryKeepsNone) {
  run_and_expect_lines("");
  EXPECT_FALSE(fs::exists(dir_ / "cache"));
  // A directory that cannot be made (a file in its place): the compressed file is read as it is.
  std::ofstream(path("cache")).close();
  run_and_expect_lines((dir_ / "cache").string());
  EXPECT_TRUE(fs::is_regular_file(path("cache")));
}

}  // namespace
