#include "late_blocks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace tleak::agent {
namespace {

std::vector<LiveBlock> listed() {
  std::vector<LiveBlock> out(1 << 16);
  out.resize(late_blocks(out.data(), out.size()));
  std::sort(out.begin(), out.end(),
            [](const LiveBlock& a, const LiveBlock& b) { return a.address < b.address; });
  return out;
}

bool same(const std::vector<LiveBlock>& got, const std::vector<LiveBlock>& expected) {
  if (got.size() != expected.size()) return false;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i].address != expected[i].address || got[i].size != expected[i].size) return false;
  }
  return true;
}

// One process-wide set: the steps of one story, in order.
TEST(LateBlocks, ListsTheBlocksStillAllocatedThroughFreesAndReuse) {
  EXPECT_TRUE(listed().empty());  // nothing noted before the exit fence maps the set
  late_block_allocated(0x1000, 64);
  EXPECT_TRUE(listed().empty());
  ASSERT_TRUE(late_blocks_begin());
  EXPECT_TRUE(listed().empty());

  late_block_allocated(0x1000, 64);
  late_block_allocated(0x2000, 4096);
  late_block_allocated(0x3000, 0);  // a zero-byte block is still one (read as none: too short)
  EXPECT_TRUE(same(listed(), {{0x1000, 64}, {0x2000, 4096}, {0x3000, 2}}));

  late_block_freed(0x2000);
  late_block_freed(0x9000);  // never late: nothing changes
  EXPECT_TRUE(same(listed(), {{0x1000, 64}, {0x3000, 2}}));

  // The same address again (the C library hands a freed block out first), with another size.
  late_block_allocated(0x2000, 32);
  EXPECT_TRUE(same(listed(), {{0x1000, 64}, {0x2000, 32}, {0x3000, 2}}));

  // Many blocks allocated and freed in turn take freed entries again: the set never fills.
  for (std::uint64_t i = 0; i < 200000; ++i) {
    const std::uint64_t address = 0x100000 + 16 * i;
    late_block_allocated(address, 16);
    late_block_freed(address);
  }
  late_block_allocated(0x5000, 8);
  EXPECT_TRUE(same(listed(), {{0x1000, 64}, {0x2000, 32}, {0x3000, 2}, {0x5000, 8}}));
}

}  // namespace
}  // namespace tleak::agent
