// Pages never touched are told from pages written, read, or backed by a file's bytes in memory.
#include "untouched_pages.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

namespace tleak::agent {
namespace {

TEST(UntouchedPages, OnlyPagesNeitherWrittenNorReadAreUntouched) {
  constexpr std::size_t kPages = 1024;  // more than one window of pagemap entries
  auto* memory = static_cast<unsigned char*>(
      mmap(nullptr, kPages * kPageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(memory, MAP_FAILED);
  ASSERT_EQ(madvise(memory, kPages * kPageBytes, MADV_NOHUGEPAGE), 0);  // one page at a time
  memory[3 * kPageBytes + 100] = 1;                                     // written
  volatile unsigned char read = memory[700 * kPageBytes];               // read: the zero page
  (void)read;
  UntouchedPages pages;
  pages.open();
  const auto at = [&](std::size_t page, std::size_t offset = 0) {
    return reinterpret_cast<std::uintptr_t>(memory + page * kPageBytes + offset);
  };
  EXPECT_TRUE(pages.never_touched(at(0)));
  EXPECT_FALSE(pages.never_touched(at(3)));
  EXPECT_FALSE(pages.never_touched(at(3, 4095)));
  EXPECT_TRUE(pages.never_touched(at(4)));
  EXPECT_FALSE(pages.never_touched(at(700)));  // in another window of entries
  EXPECT_TRUE(pages.never_touched(at(1023)));
  EXPECT_FALSE(pages.never_touched(at(3)));  // and back
  pages.close();
  EXPECT_FALSE(pages.never_touched(at(0)));  // without pagemap, every page counts as touched
  munmap(memory, kPages * kPageBytes);
}

// A forked copy's inherited pages are shared with its parent until either writes one: the exit scan
// reads those through /proc/self/mem, which leaves them shared (reachability.cc).
TEST(UntouchedPages, PagesSharedWithAForkedCopyAreToldApart) {
  constexpr std::size_t kPages = 4;
  auto* memory = static_cast<unsigned char*>(
      mmap(nullptr, kPages * kPageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(memory, MAP_FAILED);
  ASSERT_EQ(madvise(memory, kPages * kPageBytes, MADV_NOHUGEPAGE), 0);
  memory[0] = 1;
  memory[kPageBytes] = 1;
  const auto at = [&](std::size_t page) { return reinterpret_cast<std::uintptr_t>(memory + page * kPageBytes); };
  UntouchedPages pages;
  pages.open();
  EXPECT_FALSE(pages.shared_anonymous(at(0)));  // this process's alone
  pages.close();
  const pid_t copy = fork();
  ASSERT_GE(copy, 0);
  if (copy == 0) {
    memory[kPageBytes] = 2;  // the copy's own now
    UntouchedPages mine;
    mine.open();
    const bool right = mine.shared_anonymous(at(0)) && !mine.shared_anonymous(at(1)) &&
                       !mine.shared_anonymous(at(2)) && mine.never_touched(at(2));
    mine.close();
    _exit(right ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(copy, &status, 0), copy);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  munmap(memory, kPages * kPageBytes);
}

}  // namespace
}  // namespace tleak::agent
