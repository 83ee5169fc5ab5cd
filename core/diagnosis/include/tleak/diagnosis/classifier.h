// Turns a Recording into a verdict per allocation site, from the measured events only:
//   leak      bytes still allocated after teardown;
//   growth    live bytes rising with the iteration (Theil-Sen slope, Kendall's tau as confidence),
//             still rising at the end of the run;
//   retained  a large share of the site's memory held after its last use (drag);
//   bounded   none of these; a site that rose and then flattened says where (plateau).
// Every threshold is an option with a default chosen for tensor workloads, reported with the result.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tleak/diagnosis/recorder.h"
#include "tleak/diagnosis/step_words.h"

namespace tleak::diagnosis {

// Ordered by severity: a site gets the worst that applies.
enum class Verdict { kBounded = 0, kRetained = 1, kGrowth = 2, kLeak = 3 };
const char* to_string(Verdict verdict);
std::optional<Verdict> verdict_from_string(const std::string& name);

struct ClassifierOptions {
  // Growth: samples at or before this share of the iterations (and at least the first
  // `min_warmup_iterations`) are warm-up and not fitted.
  double warmup_fraction = 0.1;
  std::uint64_t min_warmup_iterations = 1;
  std::size_t min_growth_samples = 5;
  double growth_min_bytes_per_iteration = 1.0;
  double growth_min_confidence = 0.6;  // Kendall's tau of live bytes against iteration
  // ...or, with a weaker tau, a trend this many standard deviations from chance (a long run
  // under noise).
  double growth_min_trend_z = 4.0;
  std::int64_t growth_min_rise_bytes = 4096;
  // The last `tail_fraction` of the fitted samples must still rise at `tail_min_slope_ratio` of the
  // overall slope (unless the run ends on a pause like those between its earlier steps); a site
  // that flattened there, or ends flat for more than a tenth of the run and twice any earlier
  // pause, is bounded with a plateau.
  double tail_fraction = 0.3;
  double tail_min_slope_ratio = 0.25;
  // Retained: dead-but-held bytes reach this many; blocks spend this share of their lifetime (by
  // bytes) dead; and some block is held dead for this many ops (and across this many iteration
  // marks, 0 by default: 8 MiB dead for most of every step is retained though no mark passes).
  // Shorter drag is reported but is not a verdict: a result read by the next op is how a loop
  // body works.
  std::int64_t retained_min_bytes = 16 * 1024;
  double retained_min_drag_share = 0.25;
  std::uint64_t retained_min_drag_iterations = 0;
  std::uint64_t retained_min_drag_ops = 16;
  std::int64_t leak_min_bytes = 1;
};

struct GrowthFigures {
  bool assessed = false;  // enough samples after warm-up to fit
  double slope_bytes_per_iteration = 0;
  double confidence = 0;
  double tail_slope_bytes_per_iteration = 0;
  std::int64_t rise_bytes = 0;  // slope times the iterations fitted
  std::uint64_t samples = 0;
  std::uint64_t first_iteration = 0;
  std::uint64_t last_iteration = 0;
  std::optional<std::uint64_t> plateau_iteration;
  // Not in the report (the reason says them): how far from chance the trend is, whether the
  // series ended on a pause like those between its earlier steps, and whether the figures are
  // of a rise that began late in the run (first_iteration is its start) rather than the whole run.
  double trend_z = 0;
  double net_change_bytes = 0;  // last fitted sample minus the first
  bool tail_is_pause = false;
  bool late_onset = false;
};

struct RetainedFigures {
  bool measured = false;  // drag was measured for some freed block (the source reports uses)
  std::uint64_t drag_ops_max = 0;
  std::uint64_t drag_iterations_max = 0;
  double drag_ops_mean = 0;  // weighted by bytes
  double drag_share = 0;     // share of the blocks' lifetime (weighted by bytes) spent dead
  std::int64_t peak_dead_bytes = 0;
  std::int64_t peak_if_freed_at_last_use_bytes = 0;
  std::uint64_t resolution_events = 1;  // events between timeline points; 1 is exact
};

struct SiteFinding {
  SiteId site;
  std::size_t allocator = 0;
  Verdict verdict = Verdict::kBounded;
  std::string reason;  // the figures that decided, in words
  std::uint64_t allocations = 0, frees = 0;
  std::int64_t bytes_allocated = 0;
  std::int64_t peak_live_bytes = 0;
  std::int64_t final_live_bytes = 0;  // at the last iteration mark, before teardown
  std::int64_t leaked_bytes = 0;
  std::int64_t leaked_blocks = 0;
  // A program's blocks still allocated at exit but reachable (or, without an exit scan, unjudged).
  std::int64_t unfreed_bytes = 0;
  std::int64_t unfreed_blocks = 0;
  // Still allocated at a scanned exit but judged by no scan (Recording::unjudged).
  std::int64_t unjudged_bytes = 0;
  std::int64_t unjudged_blocks = 0;
  GrowthFigures growth;
  RetainedFigures retained;
  // At each timeline sample; empty when every sample equals final_live_bytes (most sites of a
  // program, which allocate once and keep it).
  std::vector<std::int64_t> mark_live_bytes;
};

// The bounded sites classify() added up instead of listing (a report's omitted_sites). Their
// bytes still allocated at the end are reachable at exit when the run was judged (an exit scan or
// a teardown), unjudged otherwise; a site with leaked bytes is always listed.
struct OmittedSites {
  std::uint64_t sites = 0;
  std::uint64_t allocations = 0, frees = 0;
  std::int64_t bytes_allocated = 0;
  std::int64_t largest_peak_live_bytes = 0;  // the largest peak of any one of them
  std::int64_t final_live_bytes = 0;
  std::int64_t reachable_at_exit_bytes = 0;
  std::int64_t unjudged_at_exit_bytes = 0;
  bool operator==(const OmittedSites&) const = default;
};

struct Diagnosis {
  std::vector<SiteFinding> sites;  // worst first
  OmittedSites omitted;
  GrowthFigures total_growth;      // of all live bytes together
  RetainedFigures total_retained;
};

// Fits the trend of a series sampled at `iterations` (the x of each value).
GrowthFigures fit_growth(const std::vector<std::uint64_t>& iterations,
                         const std::vector<std::int64_t>& values, std::uint64_t total_iterations,
                         const ClassifierOptions& options);

// What the classifier reads of every site but the blocks it left at the end: its verdict short of
// a leak, the figure that orders it, its growth fit, the sums over all sites, and which sites come
// first. These need the sites' timelines only, whole once a program asks to exit, while the blocks
// left are judged last (the exit scan's answer): made while the program scans, they leave for after
// it the few sites the blocks left change, not a pass over the sites (a PyTorch program's 686,000:
// 18 ms).
struct SiteJudgements {
  // 16 bytes: a million sites' are read in one pass.
  struct Site {
    static constexpr std::uint32_t kNoAllocations = UINT32_MAX;
    double key = 0;                        // orders the site within its verdict
    std::uint32_t growth = kNoAllocations;  // its fit, in `fits`; kNoAllocations: no finding
    Verdict verdict = Verdict::kBounded;   // growth, retained or bounded
    bool allocated() const { return growth != kNoAllocations; }
  };
  std::vector<Site> sites;  // by SiteId, as Recording::sites
  std::vector<GrowthFigures> fits;  // each distinct fit once (most sites share the flat one)
  // The growth and retained sites, always listed, and the best `best_bounded_wanted` bounded ones,
  // worst first (largest peak, then lowest id): the listing but for the blocks left at the end.
  std::vector<std::uint32_t> unbounded, best_bounded;
  std::size_t bounded = 0;  // bounded sites with allocations, best_bounded's or not
  // Over every site: the drag figures, and what the sites add up to save their blocks left at the
  // end (OmittedSites's reachable_at_exit_bytes and unjudged_at_exit_bytes stay 0 here).
  std::uint64_t drag_ops_max = 0, drag_iterations_max = 0;
  double drag_weighted = 0, drag_weight = 0, lifetime_weighted = 0;
  OmittedSites all;
};
// Of a recording whose sites and marks will not change: a finished one, or one whose end is still
// to come when it has no uses (RecorderLimits::uses_reported unset, a program's: then
// Recorder::finish changes no site, where with uses it adds the blocks left to their sites' drag).
// `best_bounded_wanted`: how many of the best bounded sites to keep in order; classify() with at
// most `max_findings` needs max_findings plus one for each of those that the blocks left will list
// anyway (leaked bytes), or it reads every site again.
SiteJudgements judge_sites(const Recording& recording, const ClassifierOptions& options,
                           std::size_t best_bounded_wanted);
// Room for the bounded sites among the best that leaked bytes take out of the running.
inline constexpr std::size_t kBestBoundedSpare = 256;
// judge_sites()'s `best_bounded_wanted` for a classify() of at most `max_findings`.
inline std::size_t best_bounded_for(std::size_t max_findings) {
  return max_findings < SIZE_MAX - kBestBoundedSpare ? max_findings + kBestBoundedSpare : SIZE_MAX;
}

// The sites classify() lists, worst first, when no block is left leaked: those it lists then, less
// the smallest bounded ones that sites with leaked bytes push out. To get ready ahead (their frames'
// symbols).
std::vector<SiteId> likely_findings(const SiteJudgements& sites, std::size_t max_findings);

// Every site with an allocation gets a finding, worst first, up to `max_findings`; past that, the
// bounded sites with the smallest peaks are added up in Diagnosis::omitted (leak, growth and
// retained sites are always listed).
// `words` name the series' steps in the reasons (step_words.h).
Diagnosis classify(const Recording& recording, const ClassifierOptions& options,
                   std::size_t max_findings = SIZE_MAX, const StepWords& words = iteration_words());
// The same from judge_sites() of this recording's sites, made before its end (std::invalid_argument
// when they are another number of sites).
Diagnosis classify(const Recording& recording, const ClassifierOptions& options, std::size_t max_findings,
                   const StepWords& words, const SiteJudgements& sites);

// The fewest iteration marks with which growth can be assessed (enough samples after warm-up).
std::uint64_t iterations_needed_for_growth(const ClassifierOptions& options);

}  // namespace tleak::diagnosis
