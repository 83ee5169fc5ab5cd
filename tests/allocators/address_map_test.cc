#include "tleak/detail/address_map.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <unordered_map>

namespace tleak::detail {
namespace {

const void* address(std::uintptr_t a) { return reinterpret_cast<const void*>(a); }

TEST(AddressMap, InsertFindTake) {
  AddressMap<int> map(16);
  map.insert(address(0x1000), 1);
  map.insert(address(0x2000), 2);
  map.insert(address(0x1000), 3);  // overwrite
  EXPECT_EQ(map.size(), 2u);
  ASSERT_NE(map.find(address(0x1000)), nullptr);
  EXPECT_EQ(*map.find(address(0x1000)), 3);
  EXPECT_EQ(map.find(address(0x3000)), nullptr);
  int out = 0;
  EXPECT_TRUE(map.take(address(0x2000), &out));
  EXPECT_EQ(out, 2);
  EXPECT_FALSE(map.take(address(0x2000), &out));
  EXPECT_EQ(map.size(), 1u);
}

// Random churn against std::unordered_map, with 64-byte aligned keys that collide in low bits and
// a small table that must grow and shift entries back on every erase.
TEST(AddressMap, AgreesWithAReferenceMapUnderChurn) {
  AddressMap<std::uint64_t> map(16);
  std::unordered_map<std::uintptr_t, std::uint64_t> reference;
  std::mt19937_64 rng(7);
  for (int step = 0; step < 200000; ++step) {
    const std::uintptr_t key = 0x10000 + (rng() % 4096) * 64;
    switch (rng() % 3) {
      case 0:
        map.insert(address(key), step);
        reference[key] = step;
        break;
      case 1: {
        std::uint64_t out = 0;
        const bool found = map.take(address(key), &out);
        const auto it = reference.find(key);
        ASSERT_EQ(found, it != reference.end());
        if (found) {
          ASSERT_EQ(out, it->second);
          reference.erase(it);
        }
        break;
      }
      default: {
        const std::uint64_t* value = map.find(address(key));
        const auto it = reference.find(key);
        ASSERT_EQ(value != nullptr, it != reference.end());
        if (value != nullptr) {
          ASSERT_EQ(*value, it->second);
        }
      }
    }
    ASSERT_EQ(map.size(), reference.size());
  }
  std::size_t visited = 0;
  map.for_each([&](const void* key, std::uint64_t value) {
    ++visited;
    EXPECT_EQ(reference.at(reinterpret_cast<std::uintptr_t>(key)), value);
  });
  EXPECT_EQ(visited, reference.size());
}

}  // namespace
}  // namespace tleak::detail
