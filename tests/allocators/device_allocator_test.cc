#include "tleak/device_allocator.h"

#include <gtest/gtest.h>

#include <cstring>

#include "tleak/allocator_error.h"

namespace tleak {
namespace {

TEST(DeviceAllocator, ReservesItsWholeCapacityUpFront) {
  DeviceAllocator device({.name = "device", .capacity = 1 << 20});
  EXPECT_EQ(device.stats().bytes_reserved.current, 1 << 20);
  EXPECT_EQ(device.space(), MemorySpace::kDevice);
  void* a = device.allocate(1000);
  std::memset(a, 7, 1000);
  EXPECT_EQ(device.stats().bytes_in_use.current, 1024);
  device.deallocate(a);
  EXPECT_EQ(device.stats().bytes_in_use.current, 0);
}

// allow_growth reserves region by region as the peak needs, never gives back, and still stops at
// the capacity; what is live is the same either way.
TEST(DeviceAllocator, AllowGrowthReservesByRegionsUpToTheCapacity) {
  constexpr std::size_t MiB = std::size_t{1} << 20;
  DeviceAllocator device({.name = "gpu", .capacity = 16 * MiB, .allow_growth = true});
  EXPECT_EQ(device.stats().bytes_reserved.current, 0);
  void* small = device.allocate(1000);
  EXPECT_EQ(device.stats().bytes_reserved.current, static_cast<std::int64_t>(2 * MiB));
  void* big = device.allocate(5 * MiB);  // a region of its own, rounded to 2 MiB steps
  EXPECT_EQ(device.stats().bytes_reserved.current, static_cast<std::int64_t>(8 * MiB));
  device.deallocate(big);
  device.deallocate(small);
  EXPECT_EQ(device.stats().bytes_in_use.current, 0);
  EXPECT_EQ(device.stats().bytes_reserved.current, static_cast<std::int64_t>(8 * MiB));  // kept
  void* again = device.allocate(5 * MiB);  // fits the region already reserved
  EXPECT_EQ(device.stats().bytes_reserved.current, static_cast<std::int64_t>(8 * MiB));
  EXPECT_THROW(device.allocate(9 * MiB), OutOfMemoryError);  // 8 MiB left, and not in one region
  device.deallocate(again);
}

TEST(DeviceAllocator, OutOfMemorySaysWhatWasAskedInUseAndAvailable) {
  DeviceAllocator device({.name = "gpu0", .capacity = 1 << 20});
  void* half = device.allocate(512 << 10);
  try {
    device.allocate(600 << 10);
    FAIL() << "expected out of memory";
  } catch (const OutOfMemoryError& e) {
    EXPECT_EQ(e.requested(), std::size_t{600} << 10);
    EXPECT_EQ(e.in_use(), std::size_t{512} << 10);
    EXPECT_EQ(e.available(), std::size_t{512} << 10);
    EXPECT_EQ(e.largest_free(), std::size_t{512} << 10);
    EXPECT_STREQ(e.what(),
                 "gpu0: out of memory: asked for 600.0 KiB, 512.0 KiB in use, 512.0 KiB available "
                 "of 1.0 MiB (largest free block 512.0 KiB)");
  }
  device.deallocate(half);
  void* all = device.allocate(1 << 20);  // everything coalesced back
  device.deallocate(all);
}

TEST(DeviceAllocator, FragmentationCanRefuseARequestSmallerThanWhatIsFree) {
  DeviceAllocator device({.name = "device", .capacity = 4096});
  void* a = device.allocate(1024);
  void* b = device.allocate(1024);
  void* c = device.allocate(1024);
  void* d = device.allocate(1024);
  device.deallocate(a);
  device.deallocate(c);
  try {
    device.allocate(2048);
    FAIL();
  } catch (const OutOfMemoryError& e) {
    EXPECT_EQ(e.available(), 2048u);
    EXPECT_EQ(e.largest_free(), 1024u);
  }
  device.deallocate(b);
  device.deallocate(d);
}

TEST(DeviceAllocator, RejectsDoubleFreeAndForeignPointers) {
  DeviceAllocator device({.name = "device", .capacity = 1 << 20});
  void* a = device.allocate(64);
  device.deallocate(a);
  EXPECT_THROW(device.deallocate(a), AllocatorError);
  int outside = 0;
  EXPECT_THROW(device.deallocate(&outside), AllocatorError);
  EXPECT_THROW(DeviceAllocator({.name = "bad", .capacity = 100}), AllocatorError);
}

}  // namespace
}  // namespace tleak
