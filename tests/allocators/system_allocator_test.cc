#include "tleak/system_allocator.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "tleak/allocator_error.h"

namespace tleak {
namespace {

TEST(SystemAllocator, CountsRequestedBytesAndHonoursAlignment) {
  SystemAllocator heap;
  void* a = heap.allocate(100, 256);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a) % 256, 0u);
  void* b = heap.allocate(50, 1);
  EXPECT_EQ(heap.stats().bytes_in_use.current, 150);
  EXPECT_EQ(heap.stats().blocks_in_use.current, 2);
  heap.deallocate(a);
  heap.deallocate(b);
  EXPECT_EQ(heap.stats().bytes_in_use.current, 0);
  EXPECT_EQ(heap.stats().bytes_in_use.peak, 150);
}

TEST(SystemAllocator, TellsDoubleFreeFromForeignPointer) {
  SystemAllocator heap;
  void* a = heap.allocate(64);
  heap.deallocate(a);
  try {
    heap.deallocate(a);
    FAIL();
  } catch (const AllocatorError& e) {
    EXPECT_EQ(e.kind(), AllocatorErrorKind::kDoubleFree);
  }
  int outside = 0;
  try {
    heap.deallocate(&outside);
    FAIL();
  } catch (const AllocatorError& e) {
    EXPECT_EQ(e.kind(), AllocatorErrorKind::kUnknownPointer);
  }
  EXPECT_THROW(heap.allocate(0), AllocatorError);
}

}  // namespace
}  // namespace tleak
