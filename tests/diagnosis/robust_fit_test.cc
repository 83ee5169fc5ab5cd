#include "tleak/diagnosis/robust_fit.h"

#include <gtest/gtest.h>

#include <vector>

namespace tleak::diagnosis {
namespace {

TEST(RobustFit, ExactLine) {
  std::vector<Point> points;
  for (int i = 0; i < 50; ++i) points.push_back({double(i), 7.0 + 3.5 * i});
  const TrendFit fit = fit_trend(points);
  EXPECT_DOUBLE_EQ(fit.slope, 3.5);
  EXPECT_DOUBLE_EQ(fit.intercept, 7.0);
  EXPECT_DOUBLE_EQ(fit.tau, 1.0);
}

TEST(RobustFit, OutliersDoNotMoveTheSlope) {
  std::vector<Point> points;
  for (int i = 0; i < 100; ++i) points.push_back({double(i), 10.0 * i + (i % 10 == 0 ? 1e6 : 0)});
  EXPECT_NEAR(fit_trend(points).slope, 10.0, 0.5);
}

TEST(RobustFit, FallingAndFlat) {
  std::vector<Point> falling, flat;
  for (int i = 0; i < 20; ++i) {
    falling.push_back({double(i), -2.0 * i});
    flat.push_back({double(i), 5.0});
  }
  EXPECT_DOUBLE_EQ(fit_trend(falling).tau, -1.0);
  EXPECT_DOUBLE_EQ(fit_trend(flat).slope, 0.0);
  EXPECT_DOUBLE_EQ(fit_trend(flat).tau, 0.0);
}

TEST(RobustFit, SubsamplesLongSeries) {
  std::vector<Point> points;
  for (int i = 0; i < 10000; ++i) points.push_back({double(i), 4.0 * i});
  const TrendFit fit = fit_trend(points, 64);
  EXPECT_EQ(fit.points, 64u);
  EXPECT_DOUBLE_EQ(fit.slope, 4.0);
}

TEST(RobustFit, DegenerateInputsGiveAZeroFit) {
  EXPECT_EQ(fit_trend({}).points, 0u);
  const std::vector<Point> same_x = {{1, 1}, {1, 5}};
  EXPECT_DOUBLE_EQ(fit_trend(same_x).slope, 0.0);
}

}  // namespace
}  // namespace tleak::diagnosis
