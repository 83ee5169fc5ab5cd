#include "tleak/detail/best_fit_heap.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "tleak/allocator_error.h"

namespace tleak::detail {
namespace {

// The heap never touches the memory it manages, so a plain aligned buffer stands in for a chunk.
struct Arena {
  explicit Arena(std::size_t size) : bytes(size + BestFitHeap::kGranule) {
    auto address = reinterpret_cast<std::uintptr_t>(bytes.data());
    base = reinterpret_cast<char*>((address + 63) & ~std::uintptr_t{63});
  }
  std::vector<char> bytes;
  char* base;
};

TEST(BestFitHeap, ChoosesTheSmallestHoleThatFits) {
  Arena arena(64 * 1024);
  BestFitHeap heap("test");
  heap.add_region(arena.base, 64 * 1024);
  std::size_t got = 0;
  // Holes of 1024, 256 and 512 bytes separated by live blocks.
  void* a = heap.allocate(1024, 64, &got);
  void* keep1 = heap.allocate(64, 64, &got);
  void* b = heap.allocate(256, 64, &got);
  void* keep2 = heap.allocate(64, 64, &got);
  void* c = heap.allocate(512, 64, &got);
  void* keep3 = heap.allocate(64, 64, &got);
  heap.deallocate(a);
  heap.deallocate(b);
  heap.deallocate(c);

  EXPECT_EQ(heap.allocate(200, 64, &got), b);
  EXPECT_EQ(got, 256u);
  EXPECT_EQ(heap.allocate(300, 64, &got), c);
  EXPECT_EQ(got, 320u);  // the 512-byte hole is split; 192 bytes stay free behind it
  EXPECT_EQ(heap.allocate(1024, 64, &got), a);
  (void)keep1, (void)keep2, (void)keep3;
}

TEST(BestFitHeap, CoalescesBothNeighboursBackIntoOneRegion) {
  Arena arena(4096);
  BestFitHeap heap("test");
  heap.add_region(arena.base, 4096);
  std::size_t got = 0;
  void* a = heap.allocate(1024, 64, &got);
  void* b = heap.allocate(1024, 64, &got);
  void* c = heap.allocate(1024, 64, &got);
  heap.deallocate(a);
  heap.deallocate(c);
  EXPECT_EQ(heap.largest_free_block(), 2048u);  // c merged with the 1024-byte tail
  heap.deallocate(b);
  EXPECT_EQ(heap.largest_free_block(), 4096u);
  EXPECT_EQ(heap.take_empty_regions().size(), 1u);
  EXPECT_EQ(heap.region_count(), 0u);
}

TEST(BestFitHeap, HonoursLargeAlignmentAndKeepsThePaddingFree) {
  Arena arena(64 * 1024);
  BestFitHeap heap("test");
  heap.add_region(arena.base, 64 * 1024);
  std::size_t got = 0;
  void* small = heap.allocate(64, 64, &got);
  void* aligned = heap.allocate(100, 4096, &got);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(aligned) % 4096, 0u);
  EXPECT_EQ(got, 128u);
  heap.deallocate(small);
  heap.deallocate(aligned);
  EXPECT_EQ(heap.largest_free_block(), 64u * 1024);
}

TEST(BestFitHeap, ReturnsNullWhenNothingFits) {
  Arena arena(4096);
  BestFitHeap heap("test");
  heap.add_region(arena.base, 4096);
  std::size_t got = 0;
  EXPECT_EQ(heap.allocate(4097, 64, &got), nullptr);
  EXPECT_NE(heap.allocate(4096, 64, &got), nullptr);
  EXPECT_EQ(heap.allocate(1, 64, &got), nullptr);
}

TEST(BestFitHeap, TellsDoubleFreeFromForeignAndInteriorPointers) {
  Arena arena(4096);
  BestFitHeap heap("test");
  heap.add_region(arena.base, 4096);
  std::size_t got = 0;
  char* a = static_cast<char*>(heap.allocate(256, 64, &got));
  heap.allocate(256, 64, &got);
  int outside = 0;
  const auto kind_of = [&](void* p) {
    try {
      heap.deallocate(p);
    } catch (const AllocatorError& e) {
      return e.kind();
    }
    return AllocatorErrorKind::kOutOfMemory;  // "no error", never produced by deallocate
  };
  EXPECT_EQ(kind_of(&outside), AllocatorErrorKind::kUnknownPointer);
  EXPECT_EQ(kind_of(a + 64), AllocatorErrorKind::kUnknownPointer);
  EXPECT_EQ(kind_of(a + 1), AllocatorErrorKind::kUnknownPointer);
  heap.deallocate(a);
  EXPECT_EQ(kind_of(a), AllocatorErrorKind::kDoubleFree);
}

}  // namespace
}  // namespace tleak::detail
