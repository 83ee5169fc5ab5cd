#include "glibc_heaps.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstring>

namespace {

using tleak::agent::glibc_heap_at;
using tleak::agent::kGlibcHeapAlignment;

// Room for two heaps at 64 MiB-aligned places, as glibc maps them (reserved, untouched but for the
// headers written here).
class GlibcHeaps : public ::testing::Test {
 protected:
  void SetUp() override {
    reserved_ = mmap(nullptr, 3 * kGlibcHeapAlignment, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    ASSERT_NE(reserved_, MAP_FAILED);
    const auto at = reinterpret_cast<std::uintptr_t>(reserved_);
    first_ = (at + kGlibcHeapAlignment - 1) / kGlibcHeapAlignment * kGlibcHeapAlignment;
    second_ = first_ + kGlibcHeapAlignment;
    end_ = at + 3 * kGlibcHeapAlignment;
  }
  void TearDown() override { munmap(reserved_, 3 * kGlibcHeapAlignment); }

  static void header(std::uintptr_t heap, std::uint64_t arena, std::uint64_t before, std::uint64_t size,
                     std::uint64_t writable) {
    const std::uint64_t words[4] = {arena, before, size, writable};
    std::memcpy(reinterpret_cast<void*>(heap), words, sizeof words);
  }

  void* reserved_ = nullptr;
  std::uintptr_t first_ = 0, second_ = 0, end_ = 0;
};

// glibc 2.35 and later: a 48-byte header with the arena right after it; before: 32 bytes.
TEST_F(GlibcHeaps, AnArenasFirstHeapIsFoundByItsHeader) {
  header(first_, first_ + 48, 0, 0x21000, 0x21000);
  EXPECT_EQ(glibc_heap_at(first_, end_), 0x21000u);
  header(first_, first_ + 32, 0, 0x20000, 0x21000);
  EXPECT_EQ(glibc_heap_at(first_, end_), 0x21000u);
}

// A later heap of the same arena points back to the heap before it and to the arena in the first.
TEST_F(GlibcHeaps, ALaterHeapIsFoundByItsBackPointers) {
  header(first_, first_ + 48, 0, 0x21000, 0x21000);
  header(second_, first_ + 48, first_, 0x8000, 0x9000);
  EXPECT_EQ(glibc_heap_at(second_, end_), 0x9000u);
}

TEST_F(GlibcHeaps, OtherMemoryIsNoHeap) {
  // Zeros, as most memory at such a place is.
  EXPECT_EQ(glibc_heap_at(first_, end_), 0u);
  // Not at a 64 MiB-aligned place.
  header(first_ + 4096, first_ + 4096 + 48, 0, 0x1000, 0x1000);
  EXPECT_EQ(glibc_heap_at(first_ + 4096, end_), 0u);
  // A size past the writable part, a writable part past the mapping or not in whole pages, an arena
  // pointer elsewhere, a heap before that is not aligned.
  header(first_, first_ + 48, 0, 0x22000, 0x21000);
  EXPECT_EQ(glibc_heap_at(first_, end_), 0u);
  header(first_, first_ + 48, 0, 0x1000, 0x21000);
  EXPECT_EQ(glibc_heap_at(first_, first_ + 0x20000), 0u);
  header(first_, first_ + 48, 0, 0x1000, 0x1800);
  EXPECT_EQ(glibc_heap_at(first_, end_), 0u);
  header(first_, first_ + 0x1000, 0, 0x1000, 0x1000);
  EXPECT_EQ(glibc_heap_at(first_, end_), 0u);
  header(second_, first_ + 48, first_ + 8, 0x1000, 0x1000);
  EXPECT_EQ(glibc_heap_at(second_, end_), 0u);
}

}  // namespace
