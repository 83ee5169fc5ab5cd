#include "lane_merge.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace tleak::diagnosis {
namespace {

// As the agent's records: a time, and the order of arrival that breaks ties.
struct Item {
  std::uint64_t time;
  std::uint64_t order;
  bool operator==(const Item&) const = default;
};
bool before(const Item& a, const Item& b) { return a.time != b.time ? a.time < b.time : a.order < b.order; }

// `threads` sorted sequences of times, sent in chunks of random length that interleave at random,
// the way thread buffers reach tleak.
std::vector<Item> interleaved(int threads, int per_thread, std::uint32_t seed) {
  std::mt19937 random(seed);
  std::vector<std::vector<std::uint64_t>> sequences(threads);
  for (auto& sequence : sequences) {
    std::uint64_t t = random() % 100;
    for (int i = 0; i < per_thread; ++i) sequence.push_back(t += random() % 5);  // equal times too
  }
  std::vector<std::size_t> at(threads, 0);
  std::vector<Item> items;
  std::uint64_t order = 0;
  for (;;) {
    std::vector<int> open;
    for (int t = 0; t < threads; ++t) {
      if (at[t] < sequences[t].size()) open.push_back(t);
    }
    if (open.empty()) break;
    const int t = open[random() % open.size()];
    const std::size_t chunk = 1 + random() % 40;
    for (std::size_t i = 0; i < chunk && at[t] < sequences[t].size(); ++i) items.push_back({sequences[t][at[t]++], order++});
  }
  return items;
}

std::vector<Item> sorted_by_std(std::vector<Item> items) {
  std::sort(items.begin(), items.end(), before);
  return items;
}

std::vector<Item> visited(const std::vector<Item>& items) {
  std::vector<Item> out;
  visit_in_order(items, before, [&](const Item& item) { out.push_back(item); });
  return out;
}

TEST(VisitInOrder, GivesWhatAFullSortGivesForAnyNumberOfThreads) {
  for (const int threads : {1, 2, 3, 8, 9, 40}) {
    for (std::uint32_t seed = 1; seed <= 5; ++seed) {
      const std::vector<Item> items = interleaved(threads, 500, seed);
      ASSERT_EQ(visited(items), sorted_by_std(items)) << threads << " threads, seed " << seed;
    }
  }
}

TEST(VisitInOrder, AnyOrderAtAllIsVisitedSorted) {
  // Not the agent's shape (a run per item when descending, every lane of its own): still exact.
  std::vector<Item> descending, shuffled;
  for (std::uint64_t i = 0; i < 300; ++i) descending.push_back({300 - i, i});
  for (std::uint64_t i = 0; i < 300; ++i) shuffled.push_back({i * 7919 % 301, i});
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(7));
  for (const std::vector<Item>& items : {descending, shuffled, std::vector<Item>{}, std::vector<Item>{{5, 0}}}) {
    EXPECT_EQ(visited(items), sorted_by_std(items));
  }
}

TEST(VisitRunsInOrder, RunsFoundAsItemsArriveGiveTheSameOrder) {
  // As AgentSource finds them while it appends: a run begins where an item comes before the last.
  // Runs cut shorter than they could be (at every tenth item too) change nothing either.
  for (const int threads : {1, 2, 5}) {
    const std::vector<Item> items = interleaved(threads, 400, 11);
    std::vector<std::size_t> maximal, shorter;
    for (std::size_t i = 0; i < items.size(); ++i) {
      const bool descends = i == 0 || before(items[i], items[i - 1]);
      if (descends) maximal.push_back(i);
      if (descends || i % 10 == 0) shorter.push_back(i);
    }
    for (const auto& runs : {maximal, shorter}) {
      std::vector<Item> out;
      visit_runs_in_order(items, runs, before, [&](const Item& item) { out.push_back(item); });
      EXPECT_EQ(out, sorted_by_std(items)) << threads << " threads, " << runs.size() << " runs";
    }
  }
}

}  // namespace
}  // namespace tleak::diagnosis
