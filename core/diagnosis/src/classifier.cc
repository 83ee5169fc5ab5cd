#include "tleak/diagnosis/classifier.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tleak/allocator_error.h"
#include "tleak/diagnosis/robust_fit.h"

namespace tleak::diagnosis {
namespace {

std::string bytes(double n) { return format_bytes(n); }

template <class... Args>
std::string printf_string(const char* format, Args... args) {
  char text[256];
  std::snprintf(text, sizeof text, format, args...);
  return text;
}

// Peak of (live - dead): the most that would have been live had every block been freed at its
// last use, on the timelines' common points.
std::int64_t peak_ideal(PointTimeline live, PointTimeline dead, std::uint64_t end) {
  const std::uint64_t width = std::max(live.resolution(), dead.resolution());
  live.widen_to(width);
  dead.widen_to(width);
  const auto l = live.values(end), d = dead.values(end);
  std::int64_t best = 0;
  for (std::size_t i = 0; i < l.size() && i < d.size(); ++i) best = std::max(best, l[i] - d[i]);
  return best;
}

RetainedFigures retained_figures(const SiteRecord& s, std::uint64_t end) {
  RetainedFigures r;
  r.measured = s.blocks_with_uses > 0;
  r.drag_ops_max = s.drag_ops_max;
  r.drag_iterations_max = s.drag_iterations_max;
  r.drag_ops_mean = s.drag_weight_bytes == 0 ? 0 : s.drag_ops_weighted_sum / static_cast<double>(s.drag_weight_bytes);
  r.drag_share = s.lifetime_ops_weighted_sum <= 0 ? 0 : s.drag_ops_weighted_sum / s.lifetime_ops_weighted_sum;
  r.peak_dead_bytes = s.dead.peak(end);
  // Without uses nothing is dead before its free: the ideal peak is the peak itself (and a source
  // that reports no uses keeps no per-site timelines to compute it from).
  // The op-clock timeline counts a block freed and another allocated within one op together: its
  // figure can pass the event-exact peak, which bounds what freeing earlier could ever give.
  r.peak_if_freed_at_last_use_bytes =
      s.blocks_with_uses == 0 ? s.peak_live_bytes : std::min(peak_ideal(s.live, s.dead, end), s.peak_live_bytes);
  r.resolution_ops = std::max(s.live.resolution(), s.dead.resolution());
  return r;
}

}  // namespace

const char* to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::kBounded: return "bounded";
    case Verdict::kRetained: return "retained";
    case Verdict::kGrowth: return "growth";
    case Verdict::kLeak: return "leak";
  }
  return "bounded";
}

std::optional<Verdict> verdict_from_string(const std::string& name) {
  for (Verdict v : {Verdict::kBounded, Verdict::kRetained, Verdict::kGrowth, Verdict::kLeak}) {
    if (name == to_string(v)) return v;
  }
  return std::nullopt;
}

GrowthFigures fit_growth(const std::vector<std::uint64_t>& iterations,
                         const std::vector<std::int64_t>& values, std::uint64_t total_iterations,
                         const ClassifierOptions& options) {
  GrowthFigures g;
  const auto warmup = std::max<std::uint64_t>(
      options.min_warmup_iterations,
      static_cast<std::uint64_t>(std::ceil(options.warmup_fraction * static_cast<double>(total_iterations))));
  std::vector<Point> points;
  for (std::size_t i = 0; i < iterations.size() && i < values.size(); ++i) {
    if (iterations[i] > warmup) {
      points.push_back({static_cast<double>(iterations[i]), static_cast<double>(values[i])});
    }
  }
  g.samples = points.size();
  if (points.size() < std::max<std::size_t>(options.min_growth_samples, 3)) return g;
  g.assessed = true;
  g.first_iteration = static_cast<std::uint64_t>(points.front().x);
  g.last_iteration = static_cast<std::uint64_t>(points.back().x);
  const TrendFit fit = fit_trend(points);
  g.slope_bytes_per_iteration = fit.slope;
  g.confidence = fit.tau;
  g.rise_bytes = static_cast<std::int64_t>(fit.slope * (points.back().x - points.front().x));

  const std::size_t tail_n = std::max<std::size_t>(
      3, static_cast<std::size_t>(std::ceil(options.tail_fraction * static_cast<double>(points.size()))));
  const std::span<const Point> tail(points.data() + points.size() - std::min(tail_n, points.size()),
                                    std::min(tail_n, points.size()));
  g.tail_slope_bytes_per_iteration = fit_trend(tail).slope;

  // Plateau: the series rose by a meaningful amount and its tail stopped rising. It flattened at
  // the first sample from which every later one stays within 2% of the range of the end level.
  double low = points.front().y, high = points.front().y;
  for (const Point& p : points) low = std::min(low, p.y), high = std::max(high, p.y);
  const double range = high - low;
  const bool rose = points.back().y - points.front().y >= static_cast<double>(options.growth_min_rise_bytes);
  const bool flat_tail =
      g.tail_slope_bytes_per_iteration < options.tail_min_slope_ratio * std::max(g.slope_bytes_per_iteration, 0.0) ||
      g.tail_slope_bytes_per_iteration < options.growth_min_bytes_per_iteration;
  if (rose && flat_tail) {
    const double level = points.back().y, tolerance = 0.02 * range;
    std::size_t k = points.size() - 1;
    while (k > 0 && std::abs(points[k - 1].y - level) <= tolerance) --k;
    g.plateau_iteration = static_cast<std::uint64_t>(points[k].x);
  }
  return g;
}

std::uint64_t iterations_needed_for_growth(const ClassifierOptions& options) {
  for (std::uint64_t n = 1; n < 1'000'000; ++n) {
    const auto warmup = std::max<std::uint64_t>(
        options.min_warmup_iterations, static_cast<std::uint64_t>(std::ceil(options.warmup_fraction * static_cast<double>(n))));
    if (n > warmup && n - warmup >= std::max<std::size_t>(options.min_growth_samples, 3)) return n;
  }
  return 1'000'000;
}

namespace {

bool is_growth(const GrowthFigures& g, const ClassifierOptions& o) {
  return g.assessed && !g.plateau_iteration && g.slope_bytes_per_iteration >= o.growth_min_bytes_per_iteration &&
         g.confidence >= o.growth_min_confidence && g.rise_bytes >= o.growth_min_rise_bytes &&
         g.tail_slope_bytes_per_iteration >= o.tail_min_slope_ratio * g.slope_bytes_per_iteration;
}

bool is_retained(const RetainedFigures& r, const ClassifierOptions& o) {
  return r.measured && r.peak_dead_bytes >= o.retained_min_bytes && r.drag_share >= o.retained_min_drag_share &&
         r.drag_iterations_max >= o.retained_min_drag_iterations && r.drag_ops_max >= o.retained_min_drag_ops;
}

std::string growth_reason(const GrowthFigures& g) {
  return printf_string("live bytes rise %s per iteration over iterations %llu-%llu (tau %.2f)",
                bytes(g.slope_bytes_per_iteration).c_str(), static_cast<unsigned long long>(g.first_iteration),
                static_cast<unsigned long long>(g.last_iteration), g.confidence);
}

std::string bounded_reason(const SiteFinding& f, RunEnd end, const ClassifierOptions& options) {
  if (f.growth.plateau_iteration) {
    return printf_string("rose by %s, then flat from iteration %llu (plateau at %s)",
                  bytes(static_cast<double>(f.growth.rise_bytes)).c_str(),
                  static_cast<unsigned long long>(*f.growth.plateau_iteration),
                  bytes(static_cast<double>(f.final_live_bytes)).c_str());
  }
  std::string left = "all freed";
  if (f.unfreed_bytes > 0) {
    left = bytes(static_cast<double>(f.unfreed_bytes)) +
           (end == RunEnd::kExitScan ? " still reachable at exit" : " not freed when the program ended (not scanned)");
  }
  if (!f.growth.assessed) {
    // Too few iterations to tell growth from a peak: say so, never "no trend".
    return printf_string("peak %s live, %s; growth not assessed (%llu samples after warm-up; at least %llu iterations needed)",
                         bytes(static_cast<double>(f.peak_live_bytes)).c_str(), left.c_str(),
                         static_cast<unsigned long long>(f.growth.samples),
                         static_cast<unsigned long long>(iterations_needed_for_growth(options)));
  }
  return printf_string("peak %s live, %s; no trend across iterations",
                       bytes(static_cast<double>(f.peak_live_bytes)).c_str(), left.c_str());
}

}  // namespace

Diagnosis classify(const Recording& rec, const ClassifierOptions& options) {
  Diagnosis d;
  std::vector<std::uint64_t> iterations;
  std::vector<std::int64_t> totals;
  for (const MarkSample& m : rec.marks) {
    iterations.push_back(m.iteration);
    totals.push_back(m.live_bytes);
  }
  // Thinning keeps every stride-th mark; the fit must still reach the last one.
  const bool last_not_kept = !rec.marks.empty() && rec.last_mark.iteration > rec.marks.back().iteration;
  if (last_not_kept) {
    iterations.push_back(rec.last_mark.iteration);
    totals.push_back(rec.last_mark.live_bytes);
  }
  d.total_growth = fit_growth(iterations, totals, rec.iterations, options);
  {
    RetainedFigures& r = d.total_retained;
    r.measured = std::any_of(rec.sites.begin(), rec.sites.end(),
                             [](const SiteRecord& s) { return s.blocks_with_uses > 0; });
    r.peak_dead_bytes = rec.total_dead.peak(rec.end_clock);
    r.peak_if_freed_at_last_use_bytes =
        std::min(peak_ideal(rec.total_live, rec.total_dead, rec.end_clock), rec.peak_live_bytes);
    r.resolution_ops = std::max(rec.total_live.resolution(), rec.total_dead.resolution());
    double weighted = 0, weight = 0, lifetime = 0;
    for (const SiteRecord& s : rec.sites) {
      r.drag_ops_max = std::max(r.drag_ops_max, s.drag_ops_max);
      r.drag_iterations_max = std::max(r.drag_iterations_max, s.drag_iterations_max);
      weighted += s.drag_ops_weighted_sum;
      weight += static_cast<double>(s.drag_weight_bytes);
      lifetime += s.lifetime_ops_weighted_sum;
    }
    r.drag_ops_mean = weight == 0 ? 0 : weighted / weight;
    r.drag_share = lifetime <= 0 ? 0 : weighted / lifetime;
  }

  std::vector<std::int64_t> leaked_bytes(rec.sites.size(), 0), leaked_blocks(rec.sites.size(), 0);
  for (const LeakedBlock& b : rec.leaked) {
    leaked_bytes[b.site.value()] += static_cast<std::int64_t>(b.size);
    ++leaked_blocks[b.site.value()];
  }
  std::vector<std::int64_t> unfreed_bytes(rec.sites.size(), 0), unfreed_blocks(rec.sites.size(), 0);
  for (const LeakedBlock& b : rec.unfreed) {
    unfreed_bytes[b.site.value()] += static_cast<std::int64_t>(b.size);
    ++unfreed_blocks[b.site.value()];
  }
  const char* leak_words = rec.end == RunEnd::kExitScan ? "unreachable at exit" : "still allocated after teardown";
  const char* growth_words = rec.end == RunEnd::kTeardown ? ", freed only at teardown" : "";

  for (const SiteRecord& s : rec.sites) {
    if (s.allocations == 0) continue;
    SiteFinding f;
    f.site = s.site;
    f.allocator = s.allocator;
    f.allocations = s.allocations;
    f.frees = s.frees;
    f.bytes_allocated = static_cast<std::int64_t>(s.bytes_allocated);
    f.peak_live_bytes = s.peak_live_bytes;
    f.final_live_bytes = s.last_mark_live_bytes;
    f.leaked_bytes = leaked_bytes[s.site.value()];
    f.leaked_blocks = leaked_blocks[s.site.value()];
    f.unfreed_bytes = unfreed_bytes[s.site.value()];
    f.unfreed_blocks = unfreed_blocks[s.site.value()];
    std::vector<std::int64_t> series = s.series(rec.marks.size());
    // A series that is the final value throughout is left empty (SiteFinding::mark_live_bytes).
    const bool constant = std::all_of(series.begin(), series.end(),
                                      [&](std::int64_t v) { return v == f.final_live_bytes; });
    if (!constant) f.mark_live_bytes = series;
    if (last_not_kept) series.push_back(s.last_mark_live_bytes);
    f.growth = fit_growth(iterations, series, rec.iterations, options);
    f.retained = retained_figures(s, rec.end_clock);

    if (f.leaked_bytes >= options.leak_min_bytes) {
      f.verdict = Verdict::kLeak;
      f.reason = printf_string("%s in %lld block%s %s",
                    bytes(static_cast<double>(f.leaked_bytes)).c_str(), static_cast<long long>(f.leaked_blocks),
                    f.leaked_blocks == 1 ? "" : "s", leak_words);
    } else if (is_growth(f.growth, options)) {
      f.verdict = Verdict::kGrowth;
      f.reason = growth_reason(f.growth) + growth_words;
    } else if (is_retained(f.retained, options)) {
      f.verdict = Verdict::kRetained;
      f.reason = printf_string(
                    "up to %s held after last use (dead for %.0f%% of its lifetime), drag up to %llu ops / %llu iterations",
                    bytes(static_cast<double>(f.retained.peak_dead_bytes)).c_str(), 100.0 * f.retained.drag_share,
                    static_cast<unsigned long long>(f.retained.drag_ops_max),
                    static_cast<unsigned long long>(f.retained.drag_iterations_max));
    } else {
      f.verdict = Verdict::kBounded;
      f.reason = bounded_reason(f, rec.end, options);
    }
    d.sites.push_back(std::move(f));
  }

  // Worst first; within a verdict, the largest figure of that verdict first.
  const auto key = [](const SiteFinding& f) -> double {
    switch (f.verdict) {
      case Verdict::kLeak: return static_cast<double>(f.leaked_bytes);
      case Verdict::kGrowth: return f.growth.slope_bytes_per_iteration;
      case Verdict::kRetained: return static_cast<double>(f.retained.peak_dead_bytes);
      case Verdict::kBounded: return static_cast<double>(f.peak_live_bytes);
    }
    return 0;
  };
  // Sorted by index, then moved once: a program's findings are many and each is large.
  std::vector<std::size_t> order(d.sites.size());
  std::vector<double> keys(d.sites.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    order[i] = i;
    keys[i] = key(d.sites[i]);
  }
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (d.sites[a].verdict != d.sites[b].verdict) return d.sites[a].verdict > d.sites[b].verdict;
    return keys[a] > keys[b];
  });
  std::vector<SiteFinding> sorted;
  sorted.reserve(order.size());
  for (const std::size_t i : order) sorted.push_back(std::move(d.sites[i]));
  d.sites = std::move(sorted);
  return d;
}

}  // namespace tleak::diagnosis
