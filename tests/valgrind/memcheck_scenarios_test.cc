// tleak under real memcheck, as a process: memcheck sees the pool's leaks through tleak's client
// requests, not without them, never the device's; fixed scenarios are memcheck-clean; and the
// report's memcheck section agrees with what memcheck prints.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../support/process.h"
#include "tleak/diagnosis/memcheck_run.h"

namespace tleak {
namespace {

using nlohmann::json;

struct MemcheckRun {
  testing::ProcessResult process;
  diagnosis::MemcheckSummary summary;
  json report;
};

// valgrind --leak-check=full tleak run <args> --output <file>, as a user would type it.
MemcheckRun memcheck(std::vector<std::string> run_args) {
  const auto dir = std::filesystem::temp_directory_path();
  const std::string report = (dir / ("tleak-vg-" + std::to_string(getpid()) + ".json")).string();
  std::vector<std::string> args = {"--leak-check=full", "--suppressions=" TLEAK_SOURCE_DIR "/allocators/valgrind.supp",
                                   TLEAK_BINARY, "run"};
  args.insert(args.end(), run_args.begin(), run_args.end());
  args.insert(args.end(), {"--iterations", "5", "--output", report});
  MemcheckRun r{testing::run_process("/usr/bin/valgrind", args), {}, json()};
  r.summary = diagnosis::parse_memcheck_log(r.process.err);
  std::ifstream in(report);
  if (in) r.report = json::parse(in);
  std::filesystem::remove(report);
  return r;
}

TEST(Memcheck, CustomOpScratchLeakIsDefinitelyLostAtTheKernelAndMatchesTleak) {
  const MemcheckRun leaky = memcheck({"custom-op-scratch", "--variant", "leaky"});
  ASSERT_EQ(leaky.process.exit_code, 0) << leaky.process.err;
  const std::int64_t tleak_leaked = leaky.report["totals"]["leaked_bytes"];
  EXPECT_GT(tleak_leaked, 0);
  EXPECT_EQ(leaky.summary.definitely_lost, tleak_leaked) << leaky.process.err;
  const auto record = leaky.process.err.find("are definitely lost in loss record");
  ASSERT_NE(record, std::string::npos);
  EXPECT_NE(leaky.process.err.find("normalize_kernel_leaky", record), std::string::npos) << leaky.process.err;
  EXPECT_TRUE(leaky.report["memcheck"]["agrees"].get<bool>()) << leaky.report["memcheck"];
  EXPECT_TRUE(leaky.report["run"]["under_valgrind"].get<bool>());

  const MemcheckRun fixed = memcheck({"custom-op-scratch", "--variant", "fixed"});
  EXPECT_EQ(fixed.summary.definitely_lost, 0) << fixed.process.err;
  EXPECT_EQ(fixed.summary.errors, 0) << fixed.process.err;
}

TEST(Memcheck, PoolLeakIsVisibleOnlyWithTheAnnotations) {
  const MemcheckRun annotated = memcheck({"pool-hides-leak", "--variant", "leaky"});
  const std::int64_t tensor = annotated.report["totals"]["leaked_bytes"];
  EXPECT_GT(tensor, 0);
  EXPECT_EQ(annotated.summary.definitely_lost, tensor) << annotated.process.err;

  const MemcheckRun blind = memcheck({"pool-hides-leak", "--variant", "leaky", "--no-valgrind-annotations"});
  EXPECT_EQ(blind.summary.definitely_lost, 0) << blind.process.err;  // none of the tensor's bytes
  EXPECT_EQ(blind.report["totals"]["leaked_bytes"], tensor);         // tleak still sees them
  EXPECT_FALSE(blind.report["memcheck"]["agrees"].get<bool>());
  EXPECT_NE(blind.report["memcheck"]["agreement"].get<std::string>().find("without Valgrind annotations"), std::string::npos);
}

TEST(Memcheck, DeviceLeakIsInvisibleToMemcheckButNotToTleak) {
  const MemcheckRun r = memcheck({"device-hides-leak", "--variant", "leaky"});
  EXPECT_EQ(r.summary.definitely_lost, 0) << r.process.err;
  EXPECT_EQ(r.summary.errors, 0) << r.process.err;
  EXPECT_EQ(r.report["summary"]["verdict"], "leak");
  EXPECT_GT(r.report["memcheck"]["tleak_device_leaked_bytes"], 0);
  EXPECT_NE(r.report["memcheck"]["agreement"].get<std::string>().find("which memcheck cannot see"), std::string::npos);
}

TEST(Memcheck, ReportSectionMatchesMemchecksPrintedSummary) {
  const std::string report = (std::filesystem::temp_directory_path() / ("tleak-vgm-" + std::to_string(getpid()) + ".json")).string();
  const auto r = testing::run_process(TLEAK_BINARY, {"run", "custom-op-scratch", "--valgrind", "--iterations", "5", "-o", report});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(report);
  const json j = json::parse(in);
  std::ifstream log_in(report + ".memcheck.log");
  const std::string log((std::istreambuf_iterator<char>(log_in)), {});
  const auto printed = diagnosis::parse_memcheck_log(log);
  const json& m = j["memcheck"];
  // Two channels: the client request tleak made, and memcheck's own printed summary.
  EXPECT_EQ(m["lost_bytes"], printed.definitely_lost + printed.indirectly_lost);
  EXPECT_EQ(m["definitely_lost_bytes"], printed.definitely_lost);
  EXPECT_EQ(m["errors"], printed.errors);
  EXPECT_EQ(m["tleak_host_leaked_bytes"], j["totals"]["leaked_bytes"]);
  EXPECT_TRUE(m["agrees"].get<bool>());
  std::filesystem::remove(report);
  std::filesystem::remove(report + ".memcheck.log");
}

TEST(Memcheck, ParsesItsOwnSummaryFormat) {
  const auto s = diagnosis::parse_memcheck_log(
      "==1==    definitely lost: 1,234 bytes in 2 blocks\n==1==    indirectly lost: 10 bytes in 1 blocks\n"
      "==1==      possibly lost: 0 bytes in 0 blocks\n==1==    still reachable: 5 bytes in 1 blocks\n"
      "==1== ERROR SUMMARY: 3 errors from 3 contexts (suppressed: 0 from 0)\n");
  EXPECT_TRUE(s.found);
  EXPECT_EQ(s.definitely_lost, 1234);
  EXPECT_EQ(s.indirectly_lost, 10);
  EXPECT_EQ(s.still_reachable, 5);
  EXPECT_EQ(s.errors, 3);
  EXPECT_FALSE(diagnosis::parse_memcheck_log("nothing here").found);
}

// Every fixed scenario, run as `valgrind --leak-check=full tleak run <id> --variant fixed`.
class FixedUnderMemcheck : public ::testing::TestWithParam<std::string> {};

TEST_P(FixedUnderMemcheck, NoErrorsAndNothingDefinitelyLost) {
  const MemcheckRun r = memcheck({GetParam(), "--variant", "fixed"});
  EXPECT_EQ(r.process.exit_code, 0) << r.process.err;
  EXPECT_EQ(r.summary.errors, 0) << r.process.err;
  EXPECT_NE(r.process.err.find("ERROR SUMMARY: 0 errors"), std::string::npos) << r.process.err;
  EXPECT_EQ(r.summary.definitely_lost, 0) << r.process.err;
}

// Every leaky scenario: memcheck finds exactly the host bytes tleak reports leaked, and no error
// other than those leaks.
class LeakyUnderMemcheck : public ::testing::TestWithParam<std::string> {};

// Without stacks: what is compared is bytes, and the unwinder and symbolizer, which take half of
// each run's time under memcheck, run under it in every fixed scenario above.
TEST_P(LeakyUnderMemcheck, MemcheckLosesExactlyWhatTleakReportsLeaked) {
  const MemcheckRun r = memcheck({GetParam(), "--variant", "leaky", "--stack-depth", "0"});
  ASSERT_EQ(r.process.exit_code, 0) << r.process.err;
  const json& m = r.report["memcheck"];
  EXPECT_EQ(r.summary.definitely_lost + r.summary.indirectly_lost, m["tleak_host_leaked_bytes"].get<std::int64_t>())
      << r.process.err;
  EXPECT_TRUE(m["agrees"].get<bool>()) << m["agreement"];
  EXPECT_EQ(r.process.err.find("Invalid read"), std::string::npos) << r.process.err;
  EXPECT_EQ(r.process.err.find("Invalid write"), std::string::npos) << r.process.err;
  EXPECT_EQ(r.process.err.find("uninitialised"), std::string::npos) << r.process.err;
}

std::vector<std::string> all_scenarios() {
  const auto list = testing::run_process(TLEAK_BINARY, {"list"});
  std::istringstream lines(list.out);
  std::vector<std::string> ids;
  std::string line;
  std::getline(lines, line);
  while (std::getline(lines, line)) ids.push_back(line.substr(0, line.find(' ')));
  return ids;
}

std::string test_name(const ::testing::TestParamInfo<std::string>& param) {
  std::string name = param.param;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

INSTANTIATE_TEST_SUITE_P(Catalogue, FixedUnderMemcheck, ::testing::ValuesIn(all_scenarios()), test_name);
INSTANTIATE_TEST_SUITE_P(Catalogue, LeakyUnderMemcheck, ::testing::ValuesIn(all_scenarios()), test_name);

}  // namespace
}  // namespace tleak

namespace tleak {
namespace {

// As the design card and users type it: no suppressions file. Under Valgrind tleak captures stacks
// with libgcc's unwinder, whose reads memcheck accepts (libunwind's probe it does not).
TEST(MemcheckPlain, NoSuppressionsNoErrors) {
  const auto report = std::filesystem::temp_directory_path() / ("tleak-vg-plain-" + std::to_string(getpid()) + ".json");
  const auto r = testing::run_process("/usr/bin/valgrind", {"--leak-check=full", TLEAK_BINARY, "run", "custom-op-scratch",
                                                            "--variant", "fixed", "-o", report.string()});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.err.find("ERROR SUMMARY: 0 errors"), std::string::npos) << r.err.substr(0, 3000);
  const json j = json::parse(std::ifstream(report));
  EXPECT_EQ(j["summary"]["verdict"], "bounded");
  EXPECT_NE(j["sites"][0]["label"].get<std::string>().find("custom_op_scratch"), std::string::npos);
  std::filesystem::remove(report);
}

}  // namespace
}  // namespace tleak
