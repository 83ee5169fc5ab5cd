#include "tleak/diagnosis/live_table.h"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

namespace tleak::diagnosis {
namespace {

// Random inserts and takes against std::unordered_map, with addresses drawn from a small range so
// clusters, wrap-around and reuse of freed addresses all happen.
TEST(LiveTable, AgreesWithUnorderedMapUnderChurn) {
  LiveTable<std::uint64_t> table;
  std::unordered_map<std::uint64_t, std::uint64_t> truth;
  std::mt19937_64 random(7);
  for (int step = 0; step < 200000; ++step) {
    const std::uint64_t address = 16 * (1 + random() % 5000);
    if (random() % 3 != 0) {
      const bool fresh = truth.emplace(address, step).second;
      EXPECT_EQ(table.insert(address, step), fresh);
    } else {
      std::uint64_t value = 0;
      const auto it = truth.find(address);
      EXPECT_EQ(table.take(address, &value), it != truth.end());
      if (it != truth.end()) {
        EXPECT_EQ(value, it->second);
        truth.erase(it);
      }
    }
    ASSERT_EQ(table.size(), truth.size());
  }
  for (const auto& [address, value] : truth) {
    const std::uint64_t* found = table.find(address);
    ASSERT_NE(found, nullptr);
    EXPECT_EQ(*found, value);
  }
  std::size_t seen = 0;
  table.for_each([&](std::uint64_t, const std::uint64_t&) { ++seen; });
  EXPECT_EQ(seen, truth.size());
}

}  // namespace
}  // namespace tleak::diagnosis
