// The exit scan's first filter: a word is turned away only when no live block touches its 1 MiB
// granule, so no block the search would have found is ever missed.
#include "granule_set.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace tleak::agent {
namespace {

struct Block {
  std::uint64_t address, size;
};

TEST(GranuleSet, EveryByteOfEveryBlockIsInAndFarAddressesAreNot) {
  const std::vector<Block> blocks = {
      {0x555555560010, 24},                    // a small block
      {0x5555556ffff8, 16},                    // across a granule boundary
      {0x7f0000100000, 0},                     // zero-size: its address counts
      {0x7f1000000000, 5 * (1u << 20) + 123},  // a big block over six granules
  };
  std::uint64_t count = 0;
  for (const Block& b : blocks) count += GranuleSet::granules_of(b.address, b.size);
  EXPECT_EQ(count, 1u + 2u + 1u + 6u);
  const std::uint64_t capacity = GranuleSet::capacity_for(count);
  EXPECT_GE(capacity, 2 * count);
  std::vector<std::uint64_t> slots(capacity, 0);
  GranuleSet set(slots.data(), capacity);
  for (const Block& b : blocks) set.add(b.address, b.size);
  for (const Block& b : blocks) {
    EXPECT_TRUE(set.contains(b.address));
    if (b.size > 0) {
      EXPECT_TRUE(set.contains(b.address + b.size - 1));
    }
    for (std::uint64_t at = b.address; at < b.address + b.size; at += 4096) EXPECT_TRUE(set.contains(at));
  }
  EXPECT_FALSE(set.contains(0));
  EXPECT_FALSE(set.contains(0x555555460010));  // one granule below the first block's
  EXPECT_FALSE(set.contains(0x7f1000000000 + 6 * (1u << 20)));  // just past the big block's last
  EXPECT_FALSE(set.contains(0x7fffffffe000));  // a stack address
}

TEST(GranuleSet, ManyBlocksInOneGranuleAndManyGranulesStayFindable) {
  constexpr std::uint64_t kGranules = 5000;
  std::vector<std::uint64_t> slots(GranuleSet::capacity_for(kGranules), 0);
  GranuleSet set(slots.data(), slots.size());
  for (std::uint64_t g = 0; g < kGranules; ++g) {
    for (int b = 0; b < 3; ++b) set.add(((0x7f00000 + g * 7) << 20) + static_cast<std::uint64_t>(b) * 64, 48);
  }
  for (std::uint64_t g = 0; g < kGranules; ++g) {
    EXPECT_TRUE(set.contains(((0x7f00000 + g * 7) << 20) + 100)) << g;
    EXPECT_FALSE(set.contains((0x7f00000 + g * 7 + 1) << 20)) << g;
  }
}

}  // namespace
}  // namespace tleak::agent
