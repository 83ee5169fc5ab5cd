#include "tleak/diagnosis/point_timeline.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace tleak::diagnosis {
namespace {

TEST(PointTimeline, ExactAtEveryOpWhileItFits) {
  PointTimeline t(64);
  t.add_interval(3, 10, 100);
  t.add_interval(8, 20, 50);
  t.add_interval(11, 11, 7);  // a single op
  EXPECT_EQ(t.resolution(), 1u);
  EXPECT_EQ(t.peak(30), 150);
  const auto v = t.values(21);
  EXPECT_EQ(v[2], 0);
  EXPECT_EQ(v[3], 100);
  EXPECT_EQ(v[10], 150);
  EXPECT_EQ(v[11], 57);
  EXPECT_EQ(v[12], 50);
  EXPECT_EQ(v[21], 0);
}

TEST(PointTimeline, OpenEndedAddsMatchIntervals) {
  PointTimeline split(64), whole(64);
  split.add_from(5, 30);
  split.add_after(9, -30);
  whole.add_interval(5, 9, 30);
  EXPECT_EQ(split.values(40), whole.values(40));
}

// Whatever the spacing has grown to, the value at every remaining point equals the brute-force
// sum over intervals containing that point.
TEST(PointTimeline, CoarsensWithoutLosingPointValues) {
  std::mt19937_64 rng(11);
  struct Interval {
    std::uint64_t from, to;
    std::int64_t amount;
  };
  std::vector<Interval> intervals;
  PointTimeline t(32);
  for (int i = 0; i < 500; ++i) {
    const std::uint64_t from = rng() % 5000, to = from + rng() % 300;
    const std::int64_t amount = static_cast<std::int64_t>(rng() % 1000);
    intervals.push_back({from, to, amount});
    if (i % 2 == 0) {
      t.add_interval(from, to, amount);
    } else {  // split into its two halves, as a block's live span is recorded
      t.add_from(from, amount);
      t.add_after(to, -amount);
    }
  }
  EXPECT_GT(t.resolution(), 1u);
  const auto values = t.values(6000);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::uint64_t point = i * t.resolution();
    std::int64_t expected = 0;
    for (const auto& iv : intervals) {
      if (iv.from <= point && point <= iv.to) expected += iv.amount;
    }
    ASSERT_EQ(values[i], expected) << "point " << point;
  }
}

TEST(PointTimeline, MemoryStaysFixed) {
  PointTimeline t(16);
  for (std::uint64_t op = 0; op < 1'000'000; op += 1000) t.add_interval(op, op + 10, 1);
  EXPECT_LE(t.values(2'000'000).size(), 16u);
}

}  // namespace
}  // namespace tleak::diagnosis
