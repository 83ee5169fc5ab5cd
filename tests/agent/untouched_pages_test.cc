// Pages never touched are told from pages written, read, or backed by a file's bytes in memory.
#include "untouched_pages.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

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

}  // namespace
}  // namespace tleak::agent
