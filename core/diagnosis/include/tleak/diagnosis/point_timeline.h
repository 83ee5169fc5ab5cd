// A quantity sampled at evenly spaced points of the op clock (0, w, 2w, ...), built from intervals
// that are often reported after the fact: a block's dead span (last use to free) is known only when
// it is freed. Stored as a difference array of at most `max_points` entries; when the clock outgrows
// it, the spacing doubles and pairs of entries merge, so memory stays fixed however long the run.
// At spacing 1 every op is a point and peaks are exact; beyond, an interval that falls between
// two points is not seen, and resolution() says how coarse the points are.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace tleak::diagnosis {

class PointTimeline {
 public:
  // Takes no memory until the first add: a program can have hundreds of thousands of sites.
  explicit PointTimeline(std::size_t max_points) : max_points_(std::max<std::size_t>(max_points, 4)) {}

  // Adds `amount` at every point t >= from.
  void add_from(std::uint64_t from, std::int64_t amount) {
    add_at_index(ceil_index(from), amount);
  }
  // Adds `amount` at every point t > after.
  void add_after(std::uint64_t after, std::int64_t amount) {
    add_at_index(after / width_ + 1, amount);
  }
  // Adds `amount` at every point t with from <= t <= to.
  void add_interval(std::uint64_t from, std::uint64_t to, std::int64_t amount) {
    if (to < from) return;
    add_from(from, amount);
    add_after(to, -amount);
  }

  // Largest value at any point up to and including `until`.
  std::int64_t peak(std::uint64_t until) const {
    std::int64_t value = 0, best = 0;
    if (diff_.empty()) return 0;
    const std::uint64_t last = std::min<std::uint64_t>(until / width_, diff_.size() - 1);
    for (std::uint64_t i = 0; i <= last; ++i) {
      value += diff_[i];
      best = std::max(best, value);
    }
    return best;
  }
  // Values at each point up to `until`, for a caller combining two timelines point by point.
  std::vector<std::int64_t> values(std::uint64_t until) const {
    std::vector<std::int64_t> out;
    std::int64_t value = 0;
    if (diff_.empty()) return std::vector<std::int64_t>(std::min<std::uint64_t>(until / width_, max_points_ - 1) + 1, 0);
    const std::uint64_t last = std::min<std::uint64_t>(until / width_, diff_.size() - 1);
    for (std::uint64_t i = 0; i <= last; ++i) out.push_back(value += diff_[i]);
    return out;
  }

  // Ops between two points; 1 means every op is a point.
  std::uint64_t resolution() const { return width_; }
  // Spreads this timeline to at least `width` spacing, so two timelines can be compared pointwise.
  void widen_to(std::uint64_t width) {
    if (diff_.empty()) {
      width_ = std::max(width_, width);
      return;
    }
    while (width_ < width) halve();
  }

 private:
  std::uint64_t ceil_index(std::uint64_t t) const { return (t + width_ - 1) / width_; }

  void add_at_index(std::uint64_t index, std::int64_t amount) {
    if (diff_.empty()) diff_.assign(max_points_, 0);
    while (index >= diff_.size()) {
      halve();
      // The same boundary at the new width: ceil(i / 2) keeps both add_from's and add_after's
      // meaning (worked through in point_timeline_test.cc).
      index = (index + 1) / 2;
    }
    diff_[index] += amount;
  }

  // New point j is old point 2j; its difference collects old entries 2j-1 and 2j.
  void halve() {
    const std::size_t n = diff_.size();
    std::vector<std::int64_t> merged(n, 0);
    merged[0] = diff_[0];
    for (std::size_t j = 1; j < n; ++j) {
      const std::size_t a = 2 * j - 1, b = 2 * j;
      if (a < n) merged[j] += diff_[a];
      if (b < n) merged[j] += diff_[b];
    }
    diff_.swap(merged);
    width_ *= 2;
  }

  std::size_t max_points_;
  std::vector<std::int64_t> diff_;
  std::uint64_t width_ = 1;
};

}  // namespace tleak::diagnosis
