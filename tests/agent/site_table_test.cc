// The agent's stack table, apart from any process: ids dense and stable across growth, keys that
// tell stacks apart by every frame, their order and their count, and the overflow site at the end.
#include "site_table.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <utility>
#include <vector>

namespace tleak::agent {
namespace {

TEST(SiteTable, IdsAreDenseAndStableAsTheTableGrows) {
  SiteTable table;
  ASSERT_TRUE(table.init());
  constexpr std::uint32_t kStacks = 300'000;  // four doublings past the first 32,768 slots
  for (std::uint64_t i = 0; i < kStacks; ++i) {
    const std::uint64_t frames[3] = {0x400000 + i, 0x500000, 0x600000 + (i % 7)};
    bool is_new = false;
    EXPECT_EQ(table.intern(SiteTable::key(frames, 3), &is_new), i + 1);
    ASSERT_TRUE(is_new) << i;
  }
  for (std::uint64_t i = 0; i < kStacks; i += 997) {
    const std::uint64_t frames[3] = {0x400000 + i, 0x500000, 0x600000 + (i % 7)};
    bool is_new = true;
    EXPECT_EQ(table.intern(SiteTable::key(frames, 3), &is_new), i + 1);
    EXPECT_FALSE(is_new);
  }
}

TEST(SiteTable, KeysDependOnEveryFrameTheirOrderAndTheirCount) {
  const std::uint64_t ab[2] = {0x401000, 0x402000}, ba[2] = {0x402000, 0x401000};
  const std::uint64_t zero[2] = {0, 0};
  EXPECT_NE(SiteTable::key(ab, 2), SiteTable::key(ba, 2));
  EXPECT_NE(SiteTable::key(zero, 1), SiteTable::key(zero, 2));
  EXPECT_NE(SiteTable::key(zero, 0).a, 0u);  // a zeroed cache entry is never a key
  // Return addresses one apart, as in a loop of call sites: no two keys alike.
  std::set<std::pair<std::uint64_t, std::uint64_t>> seen;
  for (std::uint64_t i = 0; i < 100'000; ++i) {
    const std::uint64_t frames[2] = {0x7f0000001000 + i, 0x401000};
    const StackKey k = SiteTable::key(frames, 2);
    EXPECT_TRUE(seen.insert({k.a, k.b}).second) << i;
  }
}

// Stacks as a library's import makes them: twelve frames, alike but for one, at every position in
// turn, and stacks that swap two frames of different lanes of the hash: no two keys alike (96 bits
// of each are kept, so the table's tag must differ too).
TEST(SiteTable, StacksThatDifferInOneFrameNeverShareAKey) {
  std::set<std::pair<std::uint64_t, std::uint32_t>> seen;
  std::uint64_t frames[12];
  for (int p = 0; p < 12; ++p) {
    for (std::uint64_t v = 0; v < 20'000; ++v) {
      for (int i = 0; i < 12; ++i) frames[i] = 0x7f1200000000 + static_cast<std::uint64_t>(i) * 0x40;
      frames[p] = 0x5500000000 + v * 5;
      const StackKey k = SiteTable::key(frames, 12);
      ASSERT_TRUE(seen.insert({k.a, static_cast<std::uint32_t>(k.b)}).second) << p << " " << v;
    }
  }
  for (int i = 0; i < 12; ++i) frames[i] = 0x401000 + static_cast<std::uint64_t>(i) * 8;
  const StackKey before = SiteTable::key(frames, 12);
  std::swap(frames[2], frames[3]);
  EXPECT_NE(SiteTable::key(frames, 12), before);
  std::swap(frames[2], frames[3]);
  std::swap(frames[1], frames[5]);  // same lane, other order
  EXPECT_NE(SiteTable::key(frames, 12), before);
}

TEST(SiteTable, PastItsLastIdEveryNewStackIsTheOverflowSite) {
  SiteTable table;
  ASSERT_TRUE(table.init());
  bool is_new = false;
  for (std::uint64_t i = 1; i < SiteTable::kMaxSites; ++i) {
    const std::uint64_t frame = i;
    ASSERT_EQ(table.intern(SiteTable::key(&frame, 1), &is_new), i);
  }
  const std::uint64_t one_more = SiteTable::kMaxSites;
  EXPECT_EQ(table.intern(SiteTable::key(&one_more, 1), &is_new), SiteTable::kOverflowSite);
  EXPECT_FALSE(is_new);
  const std::uint64_t first = 1;
  EXPECT_EQ(table.intern(SiteTable::key(&first, 1), &is_new), 1u);  // old stacks keep their ids
}

}  // namespace
}  // namespace tleak::agent
