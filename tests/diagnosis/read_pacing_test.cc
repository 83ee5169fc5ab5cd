#include "read_pacing.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace tleak::diagnosis {
namespace {

constexpr std::uint64_t kMs = 1'000'000;

// The first read has no earlier one to measure a rate from: no pause on a guess (the program may
// be about to stream hard).
TEST(ReadPacing, TheFirstReadKnowsNoRate) {
  ReadPacing pacing(4 << 20);
  EXPECT_EQ(pacing.pause_after(100, 5'000 * kMs), 0u);
}

TEST(ReadPacing, ATrickleIsReadEveryTwoMilliseconds) {
  ReadPacing pacing(4 << 20);
  pacing.pause_after(0, 100 * kMs);  // the first read sets the clock
  // 16 KiB in 2 ms, 8 MB/s: the buffer would take half a second to fill.
  EXPECT_EQ(pacing.pause_after(16 << 10, 102 * kMs), ReadPacing::kLongestPauseNs);
}

TEST(ReadPacing, AFastStreamIntoASmallBufferGetsAShortPause) {
  ReadPacing pacing(208 << 10);
  pacing.pause_after(0, 100 * kMs);
  // 32 KiB in 0.4 ms, 80 MB/s: 208 KiB fill in 2.6 ms; a quarter of that.
  const std::uint64_t pause = pacing.pause_after(32 << 10, 100 * kMs + 400'000);
  EXPECT_EQ(pause, (208ull << 10) * 400'000 / (32 << 10) / 4);
  EXPECT_LT(pause, ReadPacing::kLongestPauseNs);
}

TEST(ReadPacing, NoPauseWhenItWouldBeTooShortOrTheReadWasHeavyOrEmpty) {
  ReadPacing pacing(208 << 10);
  pacing.pause_after(0, 100 * kMs);
  // 40 KiB in 0.05 ms, 800 MB/s: a pause of a quarter of the fill time is under 0.1 ms.
  EXPECT_EQ(pacing.pause_after(40 << 10, 100 * kMs + 50'000), 0u);
  // A quarter of the buffer or more in one read: read again at once.
  EXPECT_EQ(pacing.pause_after(52 << 10, 110 * kMs), 0u);
  // The socket was only woken.
  EXPECT_EQ(pacing.pause_after(0, 120 * kMs), 0u);
  // No time passed: no rate to go by.
  EXPECT_EQ(pacing.pause_after(100, 120 * kMs), 0u);
}

}  // namespace
}  // namespace tleak::diagnosis
