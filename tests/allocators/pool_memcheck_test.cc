// Runs pool_memcheck_program under real memcheck and asserts on what memcheck prints: the pool's
// client requests must make a lost block and a read after free visible, at the right stacks.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <memory>
#include <regex>
#include <string>

namespace {

std::string run_under_memcheck(const std::string& mode) {
  const std::string command = std::string("valgrind --leak-check=full --error-exitcode=3 ") +
                              "--suppressions=" TLEAK_SOURCE_DIR "/allocators/valgrind.supp " +
                              TLEAK_POOL_MEMCHECK_PROGRAM " " + mode + " 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  std::string output;
  std::array<char, 4096> buffer;
  while (std::size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe.get())) {
    output.append(buffer.data(), n);
  }
  return output;
}

long definitely_lost_bytes(const std::string& output) {
  std::smatch match;
  static const std::regex pattern(R"(definitely lost: ([\d,]+) bytes)");
  if (!std::regex_search(output, match, pattern)) return 0;  // no leak summary: nothing lost
  std::string digits = match[1];
  std::erase(digits, ',');
  return std::stol(digits);
}

TEST(PoolUnderMemcheck, ALostPoolBlockIsDefinitelyLostAtTheAllocatingFunction) {
  const std::string output = run_under_memcheck("leak");
  EXPECT_EQ(definitely_lost_bytes(output), 4000) << output;
  EXPECT_NE(output.find("4,000 bytes in 1 blocks are definitely lost"), std::string::npos) << output;
  // The stack is the runtime function's, not the pool's chunk mapping.
  const auto record = output.find("definitely lost in loss record");
  ASSERT_NE(record, std::string::npos) << output;
  EXPECT_NE(output.find("lose_a_block_in_the_pool", record), std::string::npos) << output;
  EXPECT_EQ(output.find("mmap", record), std::string::npos) << output;
  // What the program reads back through the client request agrees with the printed summary.
  EXPECT_NE(output.find("client request: lost 4000 bytes in 1 blocks"), std::string::npos) << output;
}

TEST(PoolUnderMemcheck, WithoutAnnotationsTheSameLeakIsInvisible) {
  const std::string output = run_under_memcheck("leak-unannotated");
  EXPECT_EQ(definitely_lost_bytes(output), 0) << output;
  EXPECT_NE(output.find("ERROR SUMMARY: 0 errors"), std::string::npos) << output;
}

TEST(PoolUnderMemcheck, ReadingAFreedPoolBlockIsAnInvalidRead) {
  const std::string output = run_under_memcheck("use-after-free");
  EXPECT_NE(output.find("Invalid read of size 4"), std::string::npos) << output;
  EXPECT_NE(output.find("read_after_free"), std::string::npos) << output;
}

TEST(PoolUnderMemcheck, CorrectUseIsClean) {
  const std::string output = run_under_memcheck("clean");
  EXPECT_NE(output.find("ERROR SUMMARY: 0 errors"), std::string::npos) << output;
  EXPECT_EQ(definitely_lost_bytes(output), 0) << output;
}

}  // namespace
