#include "tleak/diagnosis/robust_fit.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tleak::diagnosis {
namespace {

double median(std::vector<double>& values) {
  const std::size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

}  // namespace

TrendFit fit_trend(std::span<const Point> all, std::size_t max_points) {
  // Kept per thread, cleared for each fit: a program's report fits hundreds of thousands of sites,
  // and three fresh vectors a fit were a fifth of its time.
  thread_local std::vector<Point> chosen;
  thread_local std::vector<double> slopes, intercepts;
  std::span<const Point> points = all;
  if (all.size() > max_points) {
    chosen.clear();
    for (std::size_t k = 0; k < max_points; ++k) chosen.push_back(all[k * (all.size() - 1) / (max_points - 1)]);
    points = chosen;
  }
  TrendFit fit;
  fit.points = points.size();
  // A flat series (most sites of a long program: allocated once, never changed) has every pairwise
  // slope 0 and tau 0: the answer without the quadratic pass.
  if (!points.empty() && std::all_of(points.begin(), points.end(), [&](const Point& p) { return p.y == points[0].y; })) {
    fit.intercept = points[0].y;
    return fit;
  }
  slopes.clear();
  std::int64_t concordant = 0, discordant = 0, pairs = 0, tied_y = 0;
  for (std::size_t i = 0; i < points.size(); ++i) {
    for (std::size_t j = i + 1; j < points.size(); ++j) {
      const double dx = points[j].x - points[i].x;
      if (dx == 0) continue;
      const double dy = points[j].y - points[i].y;
      slopes.push_back(dy / dx);
      ++pairs;
      if (dy * dx > 0) ++concordant;
      if (dy * dx < 0) ++discordant;
      if (dy == 0) ++tied_y;
    }
  }
  if (slopes.empty()) return fit;
  fit.slope = median(slopes);
  intercepts.clear();
  for (const Point& p : points) intercepts.push_back(p.y - fit.slope * p.x);
  fit.intercept = median(intercepts);
  const double untied = static_cast<double>(pairs - tied_y);
  fit.tau = untied <= 0 ? 0 : static_cast<double>(concordant - discordant) / std::sqrt(static_cast<double>(pairs) * untied);
  const double n = static_cast<double>(points.size());
  fit.z = static_cast<double>(concordant - discordant) / std::sqrt(n * (n - 1) * (2 * n + 5) / 18);
  return fit;
}

}  // namespace tleak::diagnosis
