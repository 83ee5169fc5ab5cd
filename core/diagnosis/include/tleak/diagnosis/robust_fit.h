// Trend statistics that outliers and sawtooths cannot drag around: the Theil-Sen slope (median of
// pairwise slopes) and Kendall's tau (how consistently y rises with x).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace tleak::diagnosis {

struct Point {
  double x;
  double y;
};

struct TrendFit {
  double slope = 0;      // Theil-Sen: median of (y_j - y_i) / (x_j - x_i), i < j
  double intercept = 0;  // median of y_i - slope * x_i
  // Kendall's tau-b in [-1, 1]: +1 when every later point is higher or equal (ties in y, the flat
  // stretches of a series that rises in steps, do not count against it).
  double tau = 0;
  // How unlikely a tau this far from 0 is for a series without trend, in standard deviations
  // (Kendall's S over its no-trend standard deviation): grows with the points, so a long noisy
  // series can show a trend its tau alone would not.
  double z = 0;
  std::size_t points = 0;
};

// Uses at most `max_points` evenly chosen points (pairs grow quadratically). Needs two points with
// different x; fewer gives a zero fit.
TrendFit fit_trend(std::span<const Point> points, std::size_t max_points = 128);

}  // namespace tleak::diagnosis
