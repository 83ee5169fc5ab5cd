// The parent's table of distinct stacks: every key finds the site it was given across the table's
// growth, keys that differ in either word are told apart, and an unknown key finds none.
#include "tleak/diagnosis/stack_keys.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace tleak::diagnosis {
namespace {

TEST(StackKeys, EveryKeyFindsItsSiteAcrossGrowth) {
  StackKeys keys;
  constexpr std::uint32_t kKeys = 100'000;  // the table starts at 1,024 slots
  for (std::uint32_t i = 1; i <= kKeys; ++i) {
    ASSERT_EQ(keys.find(i * 0x9e3779b97f4a7c15ull | 1, i), 0u) << i;
    keys.insert(i * 0x9e3779b97f4a7c15ull | 1, i, i);
  }
  EXPECT_EQ(keys.size(), kKeys);
  for (std::uint32_t i = 1; i <= kKeys; ++i) ASSERT_EQ(keys.find(i * 0x9e3779b97f4a7c15ull | 1, i), i) << i;
  keys.clear();
  EXPECT_EQ(keys.find(0x9e3779b97f4a7c15ull | 1, 1), 0u);
}

TEST(StackKeys, KeysThatDifferInEitherWordAreApart) {
  StackKeys keys;
  keys.insert(0x1001, 7, 1);
  keys.insert(0x1001, 8, 2);  // same first word
  keys.insert(0x2001, 7, 3);  // same second word
  EXPECT_EQ(keys.find(0x1001, 7), 1u);
  EXPECT_EQ(keys.find(0x1001, 8), 2u);
  EXPECT_EQ(keys.find(0x2001, 7), 3u);
  EXPECT_EQ(keys.find(0x2001, 8), 0u);
}

}  // namespace
}  // namespace tleak::diagnosis
