// The lock of a thread's record buffer, apart from any process: owners that take it at every
// allocation and a claimer (a fence) that takes all of them now and then never both hold one, in
// the membarrier way and in the spin-lock way the agent falls back to.
#include "owner_lock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace tleak::agent {
namespace {

struct Owned {
  OwnerLock lock;
  // Read and written by whoever holds the lock: a second holder at the same time shows as the two
  // apart, or as increments lost from the totals.
  std::uint64_t first = 0;
  std::uint64_t second = 0;
};

void expect_exclusion(bool asymmetric) {
  const bool available = owner_locks::init();
  if (asymmetric && !available) GTEST_SKIP() << "this kernel refuses membarrier's private expedited barrier";
  owner_locks::g_asymmetric = asymmetric;
  constexpr int kOwners = 2;
  constexpr int kClaims = 3000;
  constexpr std::uint64_t kClaimerStep = 1000;
  Owned owned[kOwners];
  std::atomic<bool> stop{false};
  std::atomic<int> started{0};
  std::uint64_t owner_steps[kOwners] = {};
  std::vector<std::thread> owners;
  for (int k = 0; k < kOwners; ++k) {
    owners.emplace_back([&, k] {
      Owned& mine = owned[k];
      std::uint64_t steps = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        mine.lock.lock_as_owner();
        const std::uint64_t first = mine.first;
        // A window between the read and the writes, as a record's write has.
        for (int spin = 0; spin < 20; ++spin) __asm__ volatile("" ::: "memory");
        mine.first = first + 1;
        mine.second = mine.second + 1;
        mine.lock.unlock_as_owner();
        if (++steps == 1) started.fetch_add(1);
      }
      owner_steps[k] = steps;
    });
  }
  // Every claim while the owners are at it.
  while (started.load() < kOwners) std::this_thread::yield();
  int torn = 0;
  for (int claim = 0; claim < kClaims; ++claim) {
    owner_locks::claim_all();
    for (Owned& o : owned) o.lock.lock_as_other();
    for (Owned& o : owned) {
      torn += o.first != o.second;
      o.first += kClaimerStep;
      o.second += kClaimerStep;
    }
    for (Owned& o : owned) o.lock.unlock_as_other();
    owner_locks::release_all();
  }
  stop.store(true);
  for (std::thread& t : owners) t.join();
  EXPECT_EQ(torn, 0);
  for (int k = 0; k < kOwners; ++k) {
    EXPECT_GT(owner_steps[k], 0u);
    EXPECT_EQ(owned[k].first, owner_steps[k] + kClaims * kClaimerStep) << "owner " << k;
    EXPECT_EQ(owned[k].second, owned[k].first) << "owner " << k;
  }
  owner_locks::g_asymmetric = available;
}

TEST(OwnerLock, OwnersAndAClaimerNeverHoldItAtOnceWithMembarrier) { expect_exclusion(true); }

TEST(OwnerLock, OwnersAndAClaimerNeverHoldItAtOnceWithSpinLocks) { expect_exclusion(false); }

}  // namespace
}  // namespace tleak::agent
