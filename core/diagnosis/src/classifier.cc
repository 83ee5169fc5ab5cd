#include "tleak/diagnosis/classifier.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <span>
#include <stdexcept>
#include <unordered_map>

#include "tleak/allocator_error.h"
#include "tleak/diagnosis/counted.h"
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

// The figures read from the event timelines, for a site or the whole run. Without uses nothing is
// dead before its free and no timeline is kept: the ideal peak is the peak itself. With them, every
// point counts blocks between allocation and last use, a subset of those live then: never above
// the peak, and exact at event order while the timeline is at full resolution.
void timeline_figures(RetainedFigures& r, const PointTimeline& needed, const PointTimeline& dead,
                      std::int64_t peak_live_bytes, const Recording& rec) {
  const std::uint64_t end = rec.ended_at.event;
  r.measured = rec.drag_measured;
  r.peak_dead_bytes = dead.peak(end);
  r.peak_if_freed_at_last_use_bytes = r.measured ? needed.peak(end) : peak_live_bytes;
  r.resolution_events = std::max(needed.resolution(), dead.resolution());
}

RetainedFigures retained_figures(const SiteRecord& s, const Recording& rec) {
  RetainedFigures r;
  if (const SiteUses* u = s.uses.get()) {
    r.drag_ops_max = u->drag_ops_max;
    r.drag_iterations_max = u->drag_iterations_max;
    r.drag_ops_mean = u->drag_weight_bytes == 0 ? 0 : u->drag_ops_weighted_sum / static_cast<double>(u->drag_weight_bytes);
    r.drag_share = u->lifetime_ops_weighted_sum <= 0 ? 0 : u->drag_ops_weighted_sum / u->lifetime_ops_weighted_sum;
    timeline_figures(r, u->needed, u->dead, s.peak_live_bytes, rec);
  } else {
    static const PointTimeline kNothing(4);
    timeline_figures(r, kNothing, kNothing, s.peak_live_bytes, rec);
  }
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

namespace {

// A rising trend the thresholds accept: a strong tau, or a weaker one far from chance.
bool significant_rise(const GrowthFigures& g, const ClassifierOptions& o) {
  return g.slope_bytes_per_iteration > 0 &&
         (g.confidence >= o.growth_min_confidence || (g.confidence > 0 && g.trend_z >= o.growth_min_trend_z));
}

// Whether a fitted stretch shows growth the thresholds accept (the plateau and the tail checked).
bool is_growth(const GrowthFigures& g, const ClassifierOptions& o) {
  const bool still_rising =
      g.tail_is_pause || g.tail_slope_bytes_per_iteration >= o.tail_min_slope_ratio * g.slope_bytes_per_iteration;
  return g.assessed && !g.plateau_iteration && g.slope_bytes_per_iteration >= o.growth_min_bytes_per_iteration &&
         significant_rise(g, o) && g.rise_bytes >= o.growth_min_rise_bytes && still_rising;
}

// Fits one stretch of samples: its trend, its tail, and whether it ended on a plateau.
GrowthFigures fit_stretch(std::span<const Point> points, const ClassifierOptions& options) {
  GrowthFigures g;
  g.samples = points.size();
  g.assessed = true;
  g.first_iteration = static_cast<std::uint64_t>(points.front().x);
  g.last_iteration = static_cast<std::uint64_t>(points.back().x);
  const TrendFit fit = fit_trend(points);
  g.slope_bytes_per_iteration = fit.slope;
  g.confidence = fit.tau;
  g.trend_z = fit.z;
  g.rise_bytes = static_cast<std::int64_t>(fit.slope * (points.back().x - points.front().x));
  g.net_change_bytes = points.back().y - points.front().y;

  const std::size_t n = points.size();
  const std::size_t tail_n =
      std::min(n, std::max<std::size_t>(3, static_cast<std::size_t>(std::ceil(options.tail_fraction * static_cast<double>(n)))));
  const std::span<const Point> tail = points.subspan(n - tail_n);
  g.tail_slope_bytes_per_iteration = fit_trend(tail).slope;

  // Flat means within 1% of the series' range, or within the tail's noise: twice the median
  // deviation of its steps from their median step (0 for a clean line or a clean plateau).
  double low = points.front().y, high = points.front().y;
  for (const Point& p : points) low = std::min(low, p.y), high = std::max(high, p.y);
  thread_local std::vector<double> steps;  // per thread, for each of a report's many fits
  steps.clear();
  for (std::size_t i = 1; i < tail.size(); ++i) steps.push_back(tail[i].y - tail[i - 1].y);
  double noise = 0;
  if (!steps.empty()) {
    const auto mid = steps.begin() + static_cast<std::ptrdiff_t>(steps.size() / 2);
    std::nth_element(steps.begin(), mid, steps.end());
    const double typical = *mid;
    for (double& d : steps) d = std::abs(d - typical);
    std::nth_element(steps.begin(), mid, steps.end());
    noise = *mid;
  }
  const double tolerance = std::max(0.01 * (high - low), 2 * noise);
  // The flat stretch the series ends on, and the longest it paused before that. A fall at the very
  // end (what a program frees as it exits) belongs to that stretch: it is no rise, and measured from
  // below it the level it fell from would read as one more pause between steps.
  std::size_t end = n - 1;
  while (end > 0 && points[end - 1].y > points[end].y + tolerance) --end;
  const double level = points[end].y;
  std::size_t k = end;
  while (k > 0 && std::abs(points[k - 1].y - level) <= tolerance) --k;
  const std::size_t final_flat = n - k;
  // Pauses count from the first rise on: the level before it is where the series started.
  std::size_t first_rise = 0;
  while (first_rise + 1 < k && points[first_rise + 1].y - points[first_rise].y <= tolerance) ++first_rise;
  std::size_t longest_pause = 0;
  for (std::size_t i = first_rise + 1; i < k;) {
    std::size_t j = i + 1;
    while (j < k && std::abs(points[j].y - points[i].y) <= tolerance) ++j;
    longest_pause = std::max(longest_pause, j - i);
    i = j;
  }
  // A series that rises in steps (a cache filled in batches, a buffer that doubles) ends on a flat
  // stretch like the ones between its steps: a pause, not a plateau. Flat for twice as long as it
  // ever paused, or longer, is a plateau (a short run's lazy imports: steps two samples apart, then
  // level for the last four, had read as growth).
  g.tail_is_pause = longest_pause >= 2 && final_flat < 2 * longest_pause;
  const bool rose = g.net_change_bytes >= static_cast<double>(options.growth_min_rise_bytes);
  const bool slow_tail =
      g.tail_slope_bytes_per_iteration < options.tail_min_slope_ratio * std::max(g.slope_bytes_per_iteration, 0.0) ||
      g.tail_slope_bytes_per_iteration < options.growth_min_bytes_per_iteration;
  const bool long_flat_end =
      final_flat >= std::max<std::size_t>(3, static_cast<std::size_t>(std::ceil(0.1 * static_cast<double>(n))));
  if (rose && !g.tail_is_pause && (slow_tail || long_flat_end)) {
    g.plateau_iteration = static_cast<std::uint64_t>(points[k].x);
  }
  return g;
}

// Growth that began late in the run, which a fit over the whole run dilutes: the stretch after the
// best hinge (flat, then a straight rise; least squares over every start that leaves at least a
// tenth of the samples), if that stretch is growth and ends above anything before it.
std::optional<GrowthFigures> late_growth(std::span<const Point> points, const ClassifierOptions& options) {
  const std::size_t n = points.size();
  const std::size_t shortest = std::max<std::size_t>(
      {options.min_growth_samples, 3, static_cast<std::size_t>(std::ceil(0.1 * static_cast<double>(n)))});
  if (n < shortest + 2) return std::nullopt;
  double sum_y = 0, sum_yy = 0;
  for (const Point& p : points) sum_y += p.y, sum_yy += p.y * p.y;
  const double count = static_cast<double>(n);
  double best_sse = std::numeric_limits<double>::infinity();
  std::size_t best = 0;
  // Sums over the stretch from k on, so each hinge costs O(1): h = x - x_k there, 0 before.
  double tail_x = 0, tail_xx = 0, tail_xy = 0, tail_y = 0;
  for (std::size_t k = n; k-- > 1;) {
    const Point& p = points[k];
    tail_x += p.x, tail_xx += p.x * p.x, tail_xy += p.x * p.y, tail_y += p.y;
    if (k + shortest > n) continue;
    const double m = static_cast<double>(n - k);
    const double sh = tail_x - m * p.x;
    const double shh = tail_xx - 2 * p.x * tail_x + m * p.x * p.x;
    const double shy = tail_xy - p.x * tail_y;
    const double var_h = shh - sh * sh / count;
    if (var_h <= 0) continue;
    const double cov = shy - sh * sum_y / count;
    const double sse = sum_yy - sum_y * sum_y / count - cov * cov / var_h;
    if (sse <= best_sse) best_sse = sse, best = k;  // ties go to the earliest start
  }
  if (best == 0) return std::nullopt;
  GrowthFigures g = fit_stretch(points.subspan(best), options);
  double before = points.front().y;
  for (std::size_t i = 0; i < best; ++i) before = std::max(before, points[i].y);
  if (!is_growth(g, options) || points.back().y < before + static_cast<double>(options.growth_min_rise_bytes)) {
    return std::nullopt;
  }
  g.late_onset = true;
  return g;
}

// How many samples at the series' end are what the program freed as it ended: a fall, within the
// last two samples (or the last twentieth, of a long run), to a level the series ends on. A program
// sampled by time may be sampled in its teardown (a C++ program's static destructors; a Python
// program's samples stop as the interpreter finalizes, AgentSource), and such a fall had made a
// site that grew to the end read as no growth (the fall held its last sample below where it
// started), and a module's import, level for ten samples and a little of it freed in the last two,
// read as growth: the short level after the fall read as the end of a pause between steps. The fits
// end before such a fall; none is cut when too few samples would be left.
std::size_t exit_fall(std::span<const Point> points, const ClassifierOptions& options) {
  const std::size_t n = points.size();
  double low = points.front().y, high = points.front().y;
  for (const Point& p : points) low = std::min(low, p.y), high = std::max(high, p.y);
  const double tolerance = 0.01 * (high - low);
  std::size_t level = n - 1;  // the first sample of the level the series ends on
  while (level > 0 && std::abs(points[level - 1].y - points.back().y) <= tolerance) --level;
  std::size_t top = level;  // the last sample before the fall into that level
  while (top > 0 && points[top - 1].y > points[top].y + tolerance) --top;
  const std::size_t cut = n - 1 - top;
  const std::size_t most = std::max<std::size_t>(2, (n + 19) / 20);
  if (top == level || cut > most || n - cut < std::max<std::size_t>(options.min_growth_samples, 3)) return 0;
  return cut;
}

}  // namespace

namespace {

std::uint64_t warmup_iterations(std::uint64_t total_iterations, const ClassifierOptions& options) {
  return std::max<std::uint64_t>(
      options.min_warmup_iterations,
      static_cast<std::uint64_t>(std::ceil(options.warmup_fraction * static_cast<double>(total_iterations))));
}

}  // namespace

GrowthFigures fit_growth(const std::vector<std::uint64_t>& iterations,
                         const std::vector<std::int64_t>& values, std::uint64_t total_iterations,
                         const ClassifierOptions& options) {
  const auto warmup = warmup_iterations(total_iterations, options);
  thread_local std::vector<Point> points;  // per thread, for each of a report's many fits
  points.clear();
  for (std::size_t i = 0; i < iterations.size() && i < values.size(); ++i) {
    if (iterations[i] > warmup) {
      points.push_back({static_cast<double>(iterations[i]), static_cast<double>(values[i])});
    }
  }
  if (points.size() < std::max<std::size_t>(options.min_growth_samples, 3)) {
    GrowthFigures g;
    g.samples = points.size();
    return g;
  }
  points.resize(points.size() - exit_fall(points, options));
  const GrowthFigures whole = fit_stretch(points, options);
  // A flat series has nothing late to find; most sites of a program are flat.
  if (whole.confidence == 0 && whole.slope_bytes_per_iteration == 0) return whole;
  // A rise that began late is told by its own slope: the whole run's would dilute it (or miss it).
  const auto late = late_growth(points, options);
  if (late && (!is_growth(whole, options) || late->slope_bytes_per_iteration >= 2 * whole.slope_bytes_per_iteration)) {
    return *late;
  }
  return whole;
}

std::uint64_t iterations_needed_for_growth(const ClassifierOptions& options) {
  for (std::uint64_t n = 1; n < 1'000'000; ++n) {
    const auto warmup = warmup_iterations(n, options);
    if (n > warmup && n - warmup >= std::max<std::size_t>(options.min_growth_samples, 3)) return n;
  }
  return 1'000'000;
}

namespace {

bool is_retained(const RetainedFigures& r, const ClassifierOptions& o) {
  return r.measured && r.peak_dead_bytes >= o.retained_min_bytes && r.drag_share >= o.retained_min_drag_share &&
         r.drag_iterations_max >= o.retained_min_drag_iterations && r.drag_ops_max >= o.retained_min_drag_ops;
}

std::string growth_reason(const GrowthFigures& g, const StepWords& w) {
  if (g.late_onset) {
    return printf_string("live bytes rise %s per %s since %s %llu, level before it (%s %llu-%llu, tau %.2f)",
                         bytes(g.slope_bytes_per_iteration).c_str(), w.per.c_str(), w.one.c_str(),
                         static_cast<unsigned long long>(g.first_iteration), w.many.c_str(),
                         static_cast<unsigned long long>(g.first_iteration),
                         static_cast<unsigned long long>(g.last_iteration), g.confidence);
  }
  return printf_string("live bytes rise %s per %s over %s %llu-%llu (tau %.2f)", bytes(g.slope_bytes_per_iteration).c_str(),
                       w.per.c_str(), w.many.c_str(), static_cast<unsigned long long>(g.first_iteration),
                       static_cast<unsigned long long>(g.last_iteration), g.confidence);
}

// Why a series that trends up is still not growth: the threshold it missed, with the figure.
std::string below_threshold(const GrowthFigures& g, const ClassifierOptions& o, const StepWords& w) {
  const std::string rise = printf_string("rises %s per %s over %s %llu-%llu (tau %.2f)",
                                         bytes(g.slope_bytes_per_iteration).c_str(), w.per.c_str(), w.many.c_str(),
                                         static_cast<unsigned long long>(g.first_iteration),
                                         static_cast<unsigned long long>(g.last_iteration), g.confidence);
  if (g.slope_bytes_per_iteration < o.growth_min_bytes_per_iteration) {
    return rise + ", below the " + bytes(o.growth_min_bytes_per_iteration) + " per " + w.per + " growth needs";
  }
  if (g.rise_bytes < o.growth_min_rise_bytes) {
    return rise + ", " + bytes(static_cast<double>(g.rise_bytes)) + " in all: below the " +
           bytes(static_cast<double>(o.growth_min_rise_bytes)) + " rise growth needs";
  }
  return rise + ", but only " + bytes(g.tail_slope_bytes_per_iteration) +
         " per " + w.per + " at the end of the run: slowing, not growth";
}


std::string bounded_reason(const SiteFinding& f, RunEnd end, const ClassifierOptions& options, const StepWords& w) {
  if (f.growth.plateau_iteration) {
    return printf_string("rose by %s, then flat from %s %llu (plateau at %s)",
                  bytes(f.growth.net_change_bytes).c_str(), w.one.c_str(),
                  static_cast<unsigned long long>(*f.growth.plateau_iteration),
                  bytes(static_cast<double>(f.final_live_bytes)).c_str());
  }
  std::string left = "all freed";
  if (f.unfreed_bytes > 0) {
    left = bytes(static_cast<double>(f.unfreed_bytes)) +
           (end == RunEnd::kExitScan ? " still reachable at exit" : " not freed when the program ended (not scanned)");
  }
  if (f.unjudged_bytes > 0) {
    left = (f.unfreed_bytes > 0 ? left + ", " : std::string()) + bytes(static_cast<double>(f.unjudged_bytes)) +
           " allocated as the program exited (not scanned)";
  }
  if (!f.growth.assessed) {
    // Too few iterations to tell growth from a peak: say so, never "no trend".
    return printf_string("peak %s live, %s; growth not assessed (%s after warm-up; at least %llu %s needed)",
                         bytes(static_cast<double>(f.peak_live_bytes)).c_str(), left.c_str(),
                         w.count(f.growth.samples).c_str(),
                         static_cast<unsigned long long>(iterations_needed_for_growth(options)), w.many.c_str());
  }
  const std::string head = printf_string("peak %s live, %s; ", bytes(static_cast<double>(f.peak_live_bytes)).c_str(), left.c_str());
  if (significant_rise(f.growth, options)) return head + below_threshold(f.growth, options, w);
  return head + printf_string("no trend across %s (tau %.2f)", w.many.c_str(), f.growth.confidence);
}

// The index of the first sample the growth fit reads (the warm-up's are skipped).
std::size_t first_after_warmup(const std::vector<std::uint64_t>& iterations, std::uint64_t total_iterations,
                               const ClassifierOptions& options) {
  const std::uint64_t warmup = warmup_iterations(total_iterations, options);
  std::size_t i = 0;
  while (i < iterations.size() && iterations[i] <= warmup) ++i;
  return i;
}

// Whether the site's series, from sample `first` on (and at the last mark, when thinning did not
// keep it), is one value, read without spelling the series out (SiteRecord::series()).
bool flat_after_warmup(const SiteRecord& s, std::size_t marks, std::size_t first, bool last_not_kept) {
  std::int64_t value = 0;
  if (s.varies) {
    if (first >= s.mark_live_bytes.size()) return !last_not_kept || s.last_mark_live_bytes == 0;
    value = s.mark_live_bytes[first];
    for (std::size_t i = first + 1; i < s.mark_live_bytes.size(); ++i) {
      if (s.mark_live_bytes[i] != value) return false;
    }
  } else if (first < marks) {
    // 0 before first_mark, flat_value from it on.
    if (s.first_mark > first && s.first_mark < marks && s.flat_value != 0) return false;
    value = s.first_mark <= first ? s.flat_value : 0;
  }
  return !last_not_kept || s.last_mark_live_bytes == value;
}

// What a site still held at the end: leaked, and allocated but not leaked (reachable at exit, or
// unjudged). Only sites with such blocks have one; most of a program's sites freed everything.
struct EndFigures {
  std::size_t site = 0;
  std::int64_t leaked_bytes = 0, leaked_blocks = 0;
  std::int64_t unfreed_bytes = 0, unfreed_blocks = 0;
  std::int64_t unjudged_bytes = 0, unjudged_blocks = 0;  // Recording::unjudged
};

// By site.
std::vector<EndFigures> end_figures(const Recording& rec) {
  std::vector<EndFigures> blocks;
  blocks.reserve(rec.leaked.size() + rec.unfreed.size() + rec.unjudged.size());
  for (const LeakedBlock& b : rec.leaked) blocks.push_back({b.site.value(), static_cast<std::int64_t>(b.size), 1, 0, 0});
  for (const LeakedBlock& b : rec.unfreed) blocks.push_back({b.site.value(), 0, 0, static_cast<std::int64_t>(b.size), 1});
  for (const LeakedBlock& b : rec.unjudged) {
    blocks.push_back({b.site.value(), 0, 0, 0, 0, static_cast<std::int64_t>(b.size), 1});
  }
  std::sort(blocks.begin(), blocks.end(), [](const EndFigures& a, const EndFigures& b) { return a.site < b.site; });
  std::vector<EndFigures> sites;
  for (const EndFigures& b : blocks) {
    if (sites.empty() || sites.back().site != b.site) sites.push_back({b.site});
    EndFigures& s = sites.back();
    s.leaked_bytes += b.leaked_bytes;
    s.leaked_blocks += b.leaked_blocks;
    s.unfreed_bytes += b.unfreed_bytes;
    s.unfreed_blocks += b.unfreed_blocks;
    s.unjudged_bytes += b.unjudged_bytes;
    s.unjudged_blocks += b.unjudged_blocks;
  }
  return sites;
}

EndFigures end_of(const std::vector<EndFigures>& ends, std::size_t site) {
  const auto at = std::lower_bound(ends.begin(), ends.end(), site,
                                   [](const EndFigures& e, std::size_t s) { return e.site < s; });
  return at != ends.end() && at->site == site ? *at : EndFigures{};
}

// Adds one site to sums of sites (OmittedSites's, but for its largest peak).
void add_up(OmittedSites& sum, const SiteRecord& s, const EndFigures& end, bool judged) {
  ++sum.sites;
  sum.allocations += s.allocations;
  sum.frees += s.frees;
  sum.bytes_allocated += static_cast<std::int64_t>(s.bytes_allocated);
  sum.final_live_bytes += s.last_mark_live_bytes;
  (judged ? sum.reachable_at_exit_bytes : sum.unjudged_at_exit_bytes) += end.unfreed_bytes;
  sum.unjudged_at_exit_bytes += end.unjudged_bytes;
}

// Whether SiteRecord::series() is `value` at every sample.
bool constant_at(const SiteRecord& s, std::size_t marks, std::int64_t value) {
  if (s.varies) return std::all_of(s.mark_live_bytes.begin(), s.mark_live_bytes.end(), [&](std::int64_t v) { return v == value; });
  const bool zeros_ok = std::min<std::size_t>(s.first_mark, marks) == 0 || value == 0;
  const bool flat_ok = s.first_mark >= marks || s.flat_value == value;
  return zeros_ok && flat_ok;
}

}  // namespace

namespace {

// The samples' iterations the fits read: the kept marks', and the last mark's when thinning did
// not keep it (the fit must still reach it).
std::vector<std::uint64_t> fitted_iterations(const Recording& rec, bool* last_not_kept) {
  std::vector<std::uint64_t> iterations;
  iterations.reserve(rec.marks.size() + 1);
  for (const MarkSample& m : rec.marks) iterations.push_back(m.iteration);
  *last_not_kept = !rec.marks.empty() && rec.last_mark.iteration > rec.marks.back().iteration;
  if (*last_not_kept) iterations.push_back(rec.last_mark.iteration);
  return iterations;
}

// The figure that orders sites of one verdict short of a leak, worst first (a leak is ordered by
// its leaked bytes, known only at the end: classify()).
double order_key(Verdict verdict, const GrowthFigures& g, const RetainedFigures& r, std::int64_t peak) {
  switch (verdict) {
    case Verdict::kGrowth: return g.slope_bytes_per_iteration;
    case Verdict::kRetained: return static_cast<double>(r.peak_dead_bytes);
    case Verdict::kBounded: return static_cast<double>(peak);
    case Verdict::kLeak: break;
  }
  return 0;
}

}  // namespace

SiteJudgements judge_sites(const Recording& rec, const ClassifierOptions& options,
                           std::size_t best_bounded_wanted) {
  SiteJudgements out;
  // The best bounded sites so far, a heap whose front is the least of them, the first to give way.
  struct Best {
    double key;
    std::uint32_t index;
  };
  const auto better = [](const Best& a, const Best& b) { return a.key != b.key ? a.key > b.key : a.index < b.index; };
  std::vector<Best> best;
  bool last_not_kept = false;
  const std::vector<std::uint64_t> iterations = fitted_iterations(rec, &last_not_kept);
  // A series that does not vary after the warm-up fits the same whatever its level (the fit reads
  // only differences): fitted once, for all such sites.
  const std::size_t marks = rec.marks.size();
  const std::size_t first_fitted = first_after_warmup(iterations, rec.iterations, options);
  std::optional<std::uint32_t> flat_fit;
  std::vector<std::int64_t> series;  // the site being fitted's, in one buffer for all of them
  // A site that rose once, after the warm-up, to one level it kept (SiteRecord::varies unset: a
  // module's objects made while it loads, in a program sampled by time) has a series told by when
  // and how high alone, and so has its fit: made once for every site of the same two (and the last
  // mark, when thinning did not keep it).
  struct StepSeries {
    std::size_t first_mark;
    std::int64_t level, last;
    bool operator==(const StepSeries&) const = default;
  };
  struct StepSeriesHash {
    std::size_t operator()(const StepSeries& k) const {
      std::uint64_t h = k.first_mark * 0x9e3779b97f4a7c15ull;
      h = (h ^ static_cast<std::uint64_t>(k.level)) * 0xbf58476d1ce4e5b9ull;
      h = (h ^ static_cast<std::uint64_t>(k.last)) * 0x94d049bb133111ebull;
      return static_cast<std::size_t>(h ^ (h >> 31));
    }
  };
  std::unordered_map<StepSeries, std::uint32_t, StepSeriesHash> step_fits;
  const auto fit = [&](GrowthFigures g) {
    out.fits.push_back(g);
    return static_cast<std::uint32_t>(out.fits.size() - 1);
  };
  out.sites.reserve(rec.sites.size());
  // A program's site records are a hundred megabytes in the deque's 512-byte blocks, wherever the
  // heap put each: the processor is asked for the ones a few sites ahead (each spans two or three
  // lines), or every site would wait for memory (two thirds of this pass's time on the PyTorch loop).
  constexpr std::size_t kAhead = 8;
  auto ahead = rec.sites.begin() + static_cast<std::ptrdiff_t>(std::min(kAhead, rec.sites.size()));
  for (std::size_t i = 0; i < rec.sites.size(); ++i) {
    if (ahead != rec.sites.end()) {
      const auto* bytes = reinterpret_cast<const char*>(&*ahead);
      __builtin_prefetch(bytes);
      __builtin_prefetch(bytes + 64);
      __builtin_prefetch(bytes + sizeof(SiteRecord) - 1);
      ++ahead;
    }
    const SiteRecord& s = rec.sites[i];
    if (const SiteUses* u = s.uses.get()) {
      out.drag_ops_max = std::max(out.drag_ops_max, u->drag_ops_max);
      out.drag_iterations_max = std::max(out.drag_iterations_max, u->drag_iterations_max);
      out.drag_weighted += u->drag_ops_weighted_sum;
      out.drag_weight += static_cast<double>(u->drag_weight_bytes);
      out.lifetime_weighted += u->lifetime_ops_weighted_sum;
    }
    if (s.allocations == 0) {
      out.sites.push_back({});
      continue;
    }
    add_up(out.all, s, EndFigures{}, true);  // the blocks left at the end are added by classify()
    std::uint32_t growth = 0;
    if (flat_after_warmup(s, marks, first_fitted, last_not_kept)) {
      if (!flat_fit) flat_fit = fit(fit_growth(iterations, std::vector<std::int64_t>(iterations.size(), 0), rec.iterations, options));
      growth = *flat_fit;
    } else {
      const auto fit_own = [&] {
        s.series_into(marks, series);
        if (last_not_kept) series.push_back(s.last_mark_live_bytes);
        return fit(fit_growth(iterations, series, rec.iterations, options));
      };
      if (s.varies) {
        growth = fit_own();
      } else {
        const auto [at, fresh] = step_fits.try_emplace({s.first_mark, s.flat_value, last_not_kept ? s.last_mark_live_bytes : 0});
        if (fresh) at->second = fit_own();
        growth = at->second;
      }
    }
    const RetainedFigures retained = retained_figures(s, rec);
    Verdict verdict = Verdict::kBounded;
    if (is_growth(out.fits[growth], options)) {
      verdict = Verdict::kGrowth;
    } else if (is_retained(retained, options)) {
      verdict = Verdict::kRetained;
    }
    const double key = order_key(verdict, out.fits[growth], retained, s.peak_live_bytes);
    out.sites.push_back({key, growth, verdict});
    if (verdict != Verdict::kBounded) {
      out.unbounded.push_back(static_cast<std::uint32_t>(i));
      continue;
    }
    ++out.bounded;
    const Best b{key, static_cast<std::uint32_t>(i)};
    if (best.size() < best_bounded_wanted) {
      best.push_back(b);
      std::push_heap(best.begin(), best.end(), better);
    } else if (!best.empty() && better(b, best.front())) {
      std::pop_heap(best.begin(), best.end(), better);
      best.back() = b;
      std::push_heap(best.begin(), best.end(), better);
    }
  }
  std::sort_heap(best.begin(), best.end(), better);
  out.best_bounded.reserve(best.size());
  for (const Best& b : best) out.best_bounded.push_back(b.index);
  return out;
}

std::vector<SiteId> likely_findings(const SiteJudgements& sites, std::size_t max_findings) {
  std::vector<SiteId> out;
  for (const std::uint32_t i : sites.unbounded) out.push_back(SiteId(i));
  for (std::size_t k = 0; k < sites.best_bounded.size() && out.size() < max_findings; ++k) {
    out.push_back(SiteId(sites.best_bounded[k]));
  }
  return out;
}

Diagnosis classify(const Recording& rec, const ClassifierOptions& options, std::size_t max_findings,
                   const StepWords& words) {
  return classify(rec, options, max_findings, words, judge_sites(rec, options, best_bounded_for(max_findings)));
}

Diagnosis classify(const Recording& rec, const ClassifierOptions& options, std::size_t max_findings,
                   const StepWords& words, const SiteJudgements& sites) {
  if (sites.sites.size() != rec.sites.size()) {
    throw std::invalid_argument("site judgements of another recording (" + std::to_string(sites.sites.size()) +
                                " sites, the recording has " + std::to_string(rec.sites.size()) + ")");
  }
  Diagnosis d;
  bool last_not_kept = false;
  const std::vector<std::uint64_t> iterations = fitted_iterations(rec, &last_not_kept);
  std::vector<std::int64_t> totals;
  totals.reserve(iterations.size());
  for (const MarkSample& m : rec.marks) totals.push_back(m.live_bytes);
  if (last_not_kept) totals.push_back(rec.last_mark.live_bytes);
  d.total_growth = fit_growth(iterations, totals, rec.iterations, options);
  timeline_figures(d.total_retained, rec.total_needed, rec.total_dead, rec.peak_live_bytes, rec);
  d.total_retained.drag_ops_max = sites.drag_ops_max;
  d.total_retained.drag_iterations_max = sites.drag_iterations_max;
  d.total_retained.drag_ops_mean = sites.drag_weight == 0 ? 0 : sites.drag_weighted / sites.drag_weight;
  d.total_retained.drag_share = sites.lifetime_weighted <= 0 ? 0 : sites.drag_weighted / sites.lifetime_weighted;

  const std::vector<EndFigures> ends = end_figures(rec);
  const bool end_judged = judged_at_end(rec.end);
  const char* leak_words = rec.end == RunEnd::kExitScan ? "unreachable at exit" : "still allocated after teardown";
  const char* growth_words = rec.end == RunEnd::kTeardown ? ", freed only at teardown" : "";
  const std::size_t marks = rec.marks.size();

  // The pass over every site: its verdict, now that the blocks left at the end are known, and the
  // figure that orders it, nothing more (a program can have a million sites, most of which will
  // only be added up).
  struct Judged {
    std::uint32_t index;    // into rec.sites
    Verdict verdict;
    bool must_list;         // not bounded, or with leaked bytes (below the leak threshold)
    double key;
    std::uint32_t growth;   // into sites.fits
  };
  // Worst first; within a verdict, the largest figure of that verdict first, then in site order.
  const auto worse = [](const Judged& a, const Judged& b) {
    if (a.verdict != b.verdict) return a.verdict > b.verdict;
    if (a.key != b.key) return a.key > b.key;
    return a.index < b.index;
  };
  // Sites that must be listed (not bounded, or with leaked bytes), and as many of the worst others
  // as leave at most `max_findings` listed (none, if those that must be are more); the others are
  // omitted, only added up.
  std::vector<Judged> judged, candidates;
  std::int64_t largest_omitted_peak = 0;  // of the omitted sites (bounded: their key is their peak)
  // What every site adds up to (the blocks left at the end aside, added here): the omitted
  // sites' figures are these less the listed ones'.
  OmittedSites all = sites.all;
  for (const EndFigures& e : ends) {
    (end_judged ? all.reachable_at_exit_bytes : all.unjudged_at_exit_bytes) += e.unfreed_bytes;
    all.unjudged_at_exit_bytes += e.unjudged_bytes;
  }
  const auto judged_with_end = [&](std::uint32_t i, const EndFigures& end) {
    const SiteJudgements::Site& site = sites.sites[i];
    const bool leak = end.leaked_bytes >= options.leak_min_bytes;
    const Verdict verdict = leak ? Verdict::kLeak : site.verdict;
    return Judged{i, verdict, verdict != Verdict::kBounded || end.leaked_bytes > 0,
                  leak ? static_cast<double>(end.leaked_bytes) : site.key, site.growth};
  };
  // From the judgements' order: only the sites with blocks left at the end are looked at again.
  // False, and nothing kept, when the best bounded sites they hold are too few to fill the listing
  // and say which omitted one comes first (then every site is read again, below).
  const auto from_best = [&] {
    for (const std::uint32_t i : sites.unbounded) judged.push_back(judged_with_end(i, end_of(ends, i)));
    for (const EndFigures& e : ends) {
      if (e.leaked_bytes > 0 && sites.sites[e.site].verdict == Verdict::kBounded) {
        judged.push_back(judged_with_end(static_cast<std::uint32_t>(e.site), e));
      }
    }
    const std::size_t room = max_findings > judged.size() ? max_findings - judged.size() : 0;
    bool omitted_found = false;
    for (const std::uint32_t i : sites.best_bounded) {
      if (end_of(ends, i).leaked_bytes > 0) continue;  // listed above
      if (candidates.size() < room) {
        candidates.push_back({i, Verdict::kBounded, false, sites.sites[i].key, sites.sites[i].growth});
      } else {
        largest_omitted_peak = static_cast<std::int64_t>(sites.sites[i].key);
        omitted_found = true;
        break;
      }
    }
    // Bounded sites past the best ones kept would be listed, or one of them omitted first.
    if (!omitted_found && sites.best_bounded.size() < sites.bounded) {
      judged.clear();
      candidates.clear();
      return false;
    }
    return true;
  };
  // Every site read again: the worst `max_findings` of those not bound to be listed so far in a heap
  // whose front is the least bad, the first to give way.
  const auto from_every_site = [&] {
    auto next_end = ends.begin();  // read in site order
    const auto omit = [&](const Judged& j) {
      largest_omitted_peak = std::max(largest_omitted_peak, static_cast<std::int64_t>(j.key));
    };
    for (std::size_t i = 0; i < sites.sites.size(); ++i) {
      const SiteJudgements::Site& site = sites.sites[i];
      if (!site.allocated()) continue;
      while (next_end != ends.end() && next_end->site < i) ++next_end;
      const EndFigures end = next_end != ends.end() && next_end->site == i ? *next_end : EndFigures{};
      const Judged j = judged_with_end(static_cast<std::uint32_t>(i), end);
      if (j.must_list) {
        judged.push_back(j);
      } else if (candidates.size() < max_findings) {
        candidates.push_back(j);
        std::push_heap(candidates.begin(), candidates.end(), worse);
      } else if (!candidates.empty() && worse(j, candidates.front())) {
        omit(candidates.front());
        std::pop_heap(candidates.begin(), candidates.end(), worse);
        candidates.back() = j;
        std::push_heap(candidates.begin(), candidates.end(), worse);
      } else {
        omit(j);
      }
    }

    // Listed: every site that must be, and as many of the worst others as leave at most
    // `max_findings` (all of those that must be listed, if they are more).
    while (!candidates.empty() && judged.size() + candidates.size() > max_findings) {
      omit(candidates.front());
      std::pop_heap(candidates.begin(), candidates.end(), worse);
      candidates.pop_back();
    }
  };
  if (!from_best()) from_every_site();
  judged.insert(judged.end(), candidates.begin(), candidates.end());
  if (all.sites > judged.size()) {
    // What the omitted sites add up to: the sums over all less those over the listed ones (a few
    // random reads instead of a pass).
    OmittedSites kept;
    for (const Judged& k : judged) add_up(kept, rec.sites[k.index], end_of(ends, k.index), end_judged);
    OmittedSites& o = d.omitted;
    o.sites = all.sites - kept.sites;
    o.allocations = all.allocations - kept.allocations;
    o.frees = all.frees - kept.frees;
    o.bytes_allocated = all.bytes_allocated - kept.bytes_allocated;
    o.final_live_bytes = all.final_live_bytes - kept.final_live_bytes;
    o.reachable_at_exit_bytes = all.reachable_at_exit_bytes - kept.reachable_at_exit_bytes;
    o.unjudged_at_exit_bytes = all.unjudged_at_exit_bytes - kept.unjudged_at_exit_bytes;
    // The omitted are bounded: their key is their peak.
    o.largest_peak_live_bytes = largest_omitted_peak;
  }
  std::sort(judged.begin(), judged.end(), worse);

  // Second pass: the findings, in full, of the sites kept.
  d.sites.reserve(judged.size());
  for (const Judged& j : judged) {
    const SiteRecord& s = rec.sites[j.index];
    SiteFinding f;
    f.site = s.site;
    f.allocator = s.allocator;
    f.verdict = j.verdict;
    f.allocations = s.allocations;
    f.frees = s.frees;
    f.bytes_allocated = static_cast<std::int64_t>(s.bytes_allocated);
    f.peak_live_bytes = s.peak_live_bytes;
    f.final_live_bytes = s.last_mark_live_bytes;
    const EndFigures end = end_of(ends, j.index);
    f.leaked_bytes = end.leaked_bytes;
    f.leaked_blocks = end.leaked_blocks;
    f.unfreed_bytes = end.unfreed_bytes;
    f.unfreed_blocks = end.unfreed_blocks;
    f.unjudged_bytes = end.unjudged_bytes;
    f.unjudged_blocks = end.unjudged_blocks;
    f.growth = sites.fits[j.growth];
    f.retained = retained_figures(s, rec);
    // A series that is the final value throughout is left empty (SiteFinding::mark_live_bytes).
    if (!constant_at(s, marks, f.final_live_bytes)) f.mark_live_bytes = s.series(marks);
    switch (f.verdict) {
      case Verdict::kLeak:
        f.reason = printf_string("%s in %s %s", bytes(static_cast<double>(f.leaked_bytes)).c_str(),
                                 counted(f.leaked_blocks, "block", "blocks").c_str(), leak_words);
        break;
      case Verdict::kGrowth:
        f.reason = growth_reason(f.growth, words) + growth_words;
        break;
      case Verdict::kRetained:
        f.reason = printf_string(
                      "up to %s held after last use (dead for %.0f%% of its lifetime), drag up to %s / %s",
                      bytes(static_cast<double>(f.retained.peak_dead_bytes)).c_str(), 100.0 * f.retained.drag_share,
                      counted(f.retained.drag_ops_max, "op", "ops").c_str(),
                      words.count(f.retained.drag_iterations_max).c_str());
        break;
      case Verdict::kBounded:
        f.reason = bounded_reason(f, rec.end, options, words);
        break;
    }
    d.sites.push_back(std::move(f));
  }
  return d;
}

}  // namespace tleak::diagnosis
