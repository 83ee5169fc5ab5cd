// A pool header is believed only when every field holds up; then only its blocks in use are read.
#include "object_pools.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace tleak::agent {
namespace {

constexpr PoolGeometry kGeometry{.pool_bytes = 16 * 1024, .first_block = 48, .size_quantum = 16, .classes = 32};
constexpr std::uint64_t kPool = 0x7f0000004000;  // where the pool "lies"

// A pool of 64-byte blocks that handed out `handed_out` blocks and freed `freed` (in this order of
// the free list), written the way pymalloc writes its header.
struct FakePool {
  std::vector<std::uint64_t> words = std::vector<std::uint64_t>(kGeometry.pool_bytes / 8, 0);
  std::uint32_t size = 64;

  FakePool(std::uint32_t handed_out, const std::vector<std::uint32_t>& freed) {
    const auto count = static_cast<std::uint32_t>(handed_out - freed.size());
    words[0] = count;
    words[1] = freed.empty() ? 0 : address_of(freed[0]);
    for (std::size_t i = 0; i < freed.size(); ++i) {
      words[word_of(freed[i])] = i + 1 < freed.size() ? address_of(freed[i + 1]) : 0;
    }
    const std::uint32_t size_class = size / kGeometry.size_quantum - 1;
    words[4] = std::uint64_t{size_class} << 32;  // arena index 0
    const std::uint32_t next_offset = kGeometry.first_block + handed_out * size;
    words[5] = next_offset | std::uint64_t{kGeometry.pool_bytes - size} << 32;
  }
  std::uint64_t address_of(std::uint32_t block) const { return kPool + kGeometry.first_block + block * size; }
  std::size_t word_of(std::uint32_t block) const { return (address_of(block) - kPool) / 8; }

  std::uint32_t read(std::uint64_t* in_use, std::uint32_t* blocks) const {
    return pool_blocks_in_use(words.data(), kPool, kGeometry, in_use, blocks);
  }
};

bool bit(const std::uint64_t* in_use, std::uint32_t b) { return (in_use[b / 64] >> (b % 64) & 1) != 0; }

TEST(ObjectPools, BlocksInUseAreTheHandedOutLessTheFreeList) {
  const FakePool pool(10, {7, 2, 9});
  std::uint64_t in_use[kMaxPoolBlocks / 64];
  std::uint32_t blocks = 0;
  ASSERT_EQ(pool.read(in_use, &blocks), 64u);
  EXPECT_EQ(blocks, 10u);
  for (std::uint32_t b = 0; b < 10; ++b) EXPECT_EQ(bit(in_use, b), b != 7 && b != 2 && b != 9) << b;
  for (std::uint32_t b = 10; b < kMaxPoolBlocks; ++b) EXPECT_FALSE(bit(in_use, b)) << b;
}

TEST(ObjectPools, AFullAndAnEmptyPoolHoldUp) {
  std::uint64_t in_use[kMaxPoolBlocks / 64];
  std::uint32_t blocks = 0;
  const std::uint32_t capacity = (kGeometry.pool_bytes - kGeometry.first_block) / 64;  // 255
  EXPECT_EQ(FakePool(capacity, {}).read(in_use, &blocks), 64u);
  EXPECT_EQ(blocks, capacity);
  EXPECT_TRUE(bit(in_use, capacity - 1));
  std::vector<std::uint32_t> all;
  for (std::uint32_t b = 0; b < capacity; ++b) all.push_back(b);
  EXPECT_EQ(FakePool(capacity, all).read(in_use, &blocks), 64u);
  for (std::uint32_t b = 0; b < capacity; ++b) EXPECT_FALSE(bit(in_use, b)) << b;
}

TEST(ObjectPools, AHeaderThatDoesNotHoldUpIsNoPool) {
  std::uint64_t in_use[kMaxPoolBlocks / 64];
  std::uint32_t blocks = 0;
  FakePool zeros(10, {});
  std::memset(zeros.words.data(), 0, 64);
  EXPECT_EQ(zeros.read(in_use, &blocks), 0u) << "memory never used";

  FakePool wrong_count(10, {7, 2});
  wrong_count.words[0] = 9;
  EXPECT_EQ(wrong_count.read(in_use, &blocks), 0u);

  FakePool cycle(10, {7, 2});
  cycle.words[cycle.word_of(2)] = cycle.address_of(7);
  EXPECT_EQ(cycle.read(in_use, &blocks), 0u);

  FakePool off_grid(10, {7});
  off_grid.words[1] += 8;
  EXPECT_EQ(off_grid.read(in_use, &blocks), 0u);

  FakePool past_handed_out(10, {7});
  past_handed_out.words[1] = past_handed_out.address_of(10);
  EXPECT_EQ(past_handed_out.read(in_use, &blocks), 0u);

  FakePool bad_class(10, {});
  bad_class.words[4] = std::uint64_t{32} << 32;
  EXPECT_EQ(bad_class.read(in_use, &blocks), 0u);

  FakePool bad_limit(10, {});
  bad_limit.words[5] += std::uint64_t{16} << 32;  // the largest offset of another block size
  EXPECT_EQ(bad_limit.read(in_use, &blocks), 0u);

  FakePool bad_next(10, {});
  bad_next.words[5] += 8;
  EXPECT_EQ(bad_next.read(in_use, &blocks), 0u);
}

}  // namespace
}  // namespace tleak::agent
