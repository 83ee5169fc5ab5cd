#include "tleak/pool_allocator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "tleak/allocator_error.h"

namespace tleak {
namespace {

constexpr std::size_t kChunk = std::size_t{2} << 20;

AllocatorErrorKind error_of(auto&& call) {
  try {
    call();
  } catch (const AllocatorError& e) {
    return e.kind();
  }
  ADD_FAILURE() << "no AllocatorError was thrown";
  return AllocatorErrorKind::kOutOfMemory;
}

TEST(PoolAllocator, RoundsToGranulesAndReservesWholeChunks) {
  PoolAllocator pool;
  void* a = pool.allocate(100);
  void* b = pool.allocate(1000);
  AllocatorStats s = pool.stats();
  EXPECT_EQ(s.bytes_in_use.current, 128 + 1024);
  EXPECT_EQ(s.blocks_in_use.current, 2);
  EXPECT_EQ(s.bytes_reserved.current, static_cast<std::int64_t>(kChunk));
  std::memset(a, 1, 100);
  std::memset(b, 2, 1000);
  pool.deallocate(a);
  pool.deallocate(b);
  s = pool.stats();
  EXPECT_EQ(s.bytes_in_use.current, 0);
  EXPECT_EQ(s.bytes_in_use.peak, 128 + 1024);
  EXPECT_EQ(s.bytes_reserved.current, static_cast<std::int64_t>(kChunk));  // cached, not returned
  EXPECT_EQ(s.allocate_calls, 2u);
  EXPECT_EQ(s.deallocate_calls, 2u);
}

TEST(PoolAllocator, ReusesAFreedBlockBeforeGrowing) {
  PoolAllocator pool;
  void* a = pool.allocate(4096);
  void* keep = pool.allocate(64);
  pool.deallocate(a);
  void* again = pool.allocate(3000);  // best fit: the 4096-byte hole, not the chunk's tail
  EXPECT_EQ(again, a);
  EXPECT_EQ(pool.stats().bytes_in_use.current, 3008 + 64);
  EXPECT_EQ(pool.stats().bytes_reserved.current, static_cast<std::int64_t>(kChunk));
  pool.deallocate(again);
  pool.deallocate(keep);
}

TEST(PoolAllocator, CoalescesNeighboursSoABiggerBlockFitsTheirSpace) {
  PoolAllocator pool;
  void* a = pool.allocate(1024);
  void* b = pool.allocate(1024);
  void* keep = pool.allocate(64);
  pool.deallocate(a);
  pool.deallocate(b);
  EXPECT_EQ(pool.allocate(2048), a);
  EXPECT_EQ(pool.stats().bytes_reserved.current, static_cast<std::int64_t>(kChunk));
  pool.deallocate(a);
  pool.deallocate(keep);
}

TEST(PoolAllocator, ReleaseCachedReturnsOnlyEmptyChunks) {
  PoolOptions options;
  options.chunk_size = 1 << 20;
  PoolAllocator pool(options);
  void* big = pool.allocate(3 << 20);  // larger than a chunk: a chunk of its own, 3 MiB
  EXPECT_EQ(pool.stats().bytes_reserved.current, 3 << 20);
  void* small = pool.allocate(64);  // the big chunk is full: a second chunk, 1 MiB
  EXPECT_EQ(pool.stats().bytes_reserved.current, 4 << 20);
  pool.deallocate(big);
  EXPECT_EQ(pool.stats().bytes_reserved.current, 4 << 20);  // freed, still cached
  EXPECT_EQ(pool.release_cached(), std::size_t{3} << 20);
  EXPECT_EQ(pool.stats().bytes_reserved.current, 1 << 20);
  EXPECT_EQ(pool.release_cached(), 0u);  // `small` still lives in the other chunk
  pool.deallocate(small);
  EXPECT_EQ(pool.release_cached(), std::size_t{1} << 20);
  EXPECT_EQ(pool.stats().bytes_reserved.current, 0);
  EXPECT_EQ(pool.stats().bytes_reserved.peak, 4 << 20);
  EXPECT_EQ(pool.stats().bytes_in_use.peak, (3 << 20) + 64);
}

TEST(PoolAllocator, AlignsToWhatIsAsked) {
  PoolAllocator pool;
  void* keep = pool.allocate(64);
  void* aligned = pool.allocate(64, 8192);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(aligned) % 8192, 0u);
  pool.deallocate(aligned);
  pool.deallocate(keep);
}

TEST(PoolAllocator, RejectsBadCallsWithoutChangingState) {
  PoolAllocator pool;
  void* a = pool.allocate(256);
  int on_stack = 0;
  EXPECT_EQ(error_of([&] { pool.allocate(0); }), AllocatorErrorKind::kInvalidSize);
  EXPECT_EQ(error_of([&] { pool.allocate(std::size_t{1} << 41); }), AllocatorErrorKind::kInvalidSize);
  EXPECT_EQ(error_of([&] { pool.allocate(64, 48); }), AllocatorErrorKind::kInvalidAlignment);
  EXPECT_EQ(error_of([&] { pool.deallocate(&on_stack); }), AllocatorErrorKind::kUnknownPointer);
  EXPECT_EQ(error_of([&] { pool.deallocate(static_cast<char*>(a) + 64); }),
            AllocatorErrorKind::kUnknownPointer);
  EXPECT_EQ(pool.stats().bytes_in_use.current, 256);
  pool.deallocate(a);
  EXPECT_EQ(error_of([&] { pool.deallocate(a); }), AllocatorErrorKind::kDoubleFree);
  EXPECT_EQ(pool.stats().deallocate_calls, 1u);
}

TEST(PoolAllocator, RefusesToReserveBeyondItsLimit) {
  PoolOptions options;
  options.name = "host";
  options.max_reserved = 4 << 20;
  PoolAllocator pool(options);
  void* a = pool.allocate(3 << 20);  // a 4 MiB chunk: exactly the limit, with 1 MiB free in it
  try {
    pool.allocate((1 << 20) + 64);  // does not fit the free MiB: would need another chunk
    FAIL();
  } catch (const AllocatorError& e) {
    EXPECT_EQ(e.kind(), AllocatorErrorKind::kOutOfMemory);
    EXPECT_STREQ(e.what(), "host: out of memory: asked for 1.0 MiB, 4.0 MiB reserved of a limit of 4.0 MiB");
  }
  EXPECT_EQ(pool.stats().bytes_reserved.current, 4 << 20);
  pool.deallocate(a);
  EXPECT_EQ(pool.release_cached(), std::size_t{4} << 20);
  pool.deallocate(pool.allocate(1 << 20));  // room again
}

TEST(PoolAllocator, ErrorMessagesNameTheProblem) {
  PoolOptions options;
  options.name = "host";
  PoolAllocator pool(options);
  try {
    pool.allocate(64, 3);
    FAIL();
  } catch (const AllocatorError& e) {
    EXPECT_STREQ(e.what(), "host: alignment 3 is not a power of two between 1 and 1 MiB");
  }
  void* a = pool.allocate(64);
  pool.deallocate(a);
  try {
    pool.deallocate(a);
    FAIL();
  } catch (const AllocatorError& e) {
    EXPECT_NE(std::string(e.what()).find("host: double free of 0x"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tleak
