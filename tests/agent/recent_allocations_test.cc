#include "recent_allocations.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>

namespace tleak::agent {
namespace {

TEST(RecentAllocations, AFreeNamesItsAllocationsRecordInTheSameMessage) {
  auto recent = std::make_unique<RecentAllocations>();
  recent->note_allocation(0x1000);          // record 0
  recent->note_allocation(0x2000);          // record 1
  EXPECT_EQ(recent->note_free(0x1000), 2);  // record 2: two back
  EXPECT_EQ(recent->note_free(0x2000), 2);  // record 3
  EXPECT_EQ(recent->note_free(0x2000), 0);  // freed again: named once only
  EXPECT_EQ(recent->note_free(0x9000), 0);  // never allocated here
  recent->note_allocation(0x1000);          // record 6, the address handed out again
  EXPECT_EQ(recent->note_free(0x1000), 1);
}

TEST(RecentAllocations, NothingBeforeANewMessageIsNamed) {
  auto recent = std::make_unique<RecentAllocations>();
  recent->note_allocation(0x1000);
  recent->new_message();
  EXPECT_EQ(recent->note_free(0x1000), 0);
  recent->note_allocation(0x3000);
  recent->note_allocation(0x1000);
  EXPECT_EQ(recent->note_free(0x1000), 1);  // counted from the message's first record
}

TEST(RecentAllocations, AnAllocationTooFarBackIsNotNamed) {
  for (const std::uint32_t between : {0xfffeu, 0xffffu}) {
    auto recent = std::make_unique<RecentAllocations>();
    recent->note_allocation(0x1000);
    for (std::uint32_t i = 0; i < between; ++i) EXPECT_EQ(recent->note_free(0x9000), 0);
    // 65,535 records back is the most a record can say.
    EXPECT_EQ(recent->note_free(0x1000), between == 0xfffeu ? 0xffff : 0) << between;
  }
}

TEST(RecentAllocations, AnAllocationPushedOutOfTheTableIsNotNamed) {
  auto recent = std::make_unique<RecentAllocations>();
  // Far more allocations than the table's places: many of the first took the place of others.
  for (std::uint64_t i = 0; i < 4096; ++i) recent->note_allocation(0x100000 + i * 0x40);
  int named = 0, not_named = 0;
  for (std::uint64_t i = 0; i < 4096; ++i)
    (recent->note_free(0x100000 + i * 0x40) != 0 ? named : not_named) += 1;
  EXPECT_GT(named, 500);
  EXPECT_LE(named, 1024);
  EXPECT_EQ(named + not_named, 4096);
}

}  // namespace
}  // namespace tleak::agent
