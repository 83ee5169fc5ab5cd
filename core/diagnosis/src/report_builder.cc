#include "tleak/diagnosis/report_builder.h"

#include <algorithm>

#include "tleak/diagnosis/step_words.h"

#include "end_profile.h"

namespace tleak::diagnosis {
namespace {

// A total of reserves is known only while every one added to it is.
void add_reserve(std::optional<std::int64_t>& total, const std::optional<std::int64_t>& reserve) {
  total = total && reserve ? std::optional(*total + *reserve) : std::nullopt;
}

const char* space_name(MemorySpace space) { return space == MemorySpace::kDevice ? "device" : "host"; }

void add_blocks(const std::vector<LeakedBlock>& blocks, std::size_t allocator, std::int64_t& bytes,
                std::int64_t& count) {
  for (const LeakedBlock& b : blocks) {
    if (b.allocator != allocator) continue;
    bytes += static_cast<std::int64_t>(b.size);
    ++count;
  }
}

void fill_totals(Report& report, const Recording& rec, const std::vector<AllocatorStats>& stats) {
  Totals& t = report.totals;
  const bool judged = judged_at_end(rec.end);
  for (std::size_t a = 0; a < rec.allocator_names.size(); ++a) {
    AllocatorTotals at;
    at.name = rec.allocator_names[a];
    at.space = space_name(rec.allocator_spaces[a]);
    at.peak_live_bytes = rec.allocator_peak_live_bytes[a];
    at.peak_unused_reserved_bytes = rec.allocator_peak_unused_reserved_bytes[a];
    at.final_live_bytes = a < rec.last_mark.allocator_live_bytes.size() ? rec.last_mark.allocator_live_bytes[a] : 0;
    add_blocks(rec.leaked, a, at.leaked_bytes, at.leaked_blocks);
    if (a < stats.size()) {
      at.peak_in_use_bytes = stats[a].bytes_in_use.peak;
      at.peak_reserved_bytes = stats[a].bytes_reserved.peak;
      at.allocate_calls = stats[a].allocate_calls;
      at.deallocate_calls = stats[a].deallocate_calls;
      t.allocations += at.allocate_calls;
      t.frees += at.deallocate_calls;
    } else {
      // The source knows only what it was asked for (a program's malloc): no rounding of its own,
      // and a reserve tleak does not see.
      at.peak_in_use_bytes = at.peak_live_bytes;
      at.peak_reserved_bytes = std::nullopt;
      at.peak_unused_reserved_bytes = std::nullopt;
    }
    if (rec.allocator_spaces[a] == MemorySpace::kHost) add_reserve(t.peak_reserved_bytes, at.peak_reserved_bytes);
    t.leaked_bytes += at.leaked_bytes;
    t.leaked_blocks += at.leaked_blocks;
    std::int64_t unfreed_bytes = 0, unfreed_blocks = 0;
    add_blocks(rec.unfreed, a, unfreed_bytes, unfreed_blocks);
    (judged ? t.reachable_at_exit_bytes : t.unjudged_at_exit_bytes) += unfreed_bytes;
    (judged ? t.reachable_at_exit_blocks : t.unjudged_at_exit_blocks) += unfreed_blocks;
    add_blocks(rec.unjudged, a, t.unjudged_at_exit_bytes, t.unjudged_at_exit_blocks);
    t.allocators.push_back(at);
  }
  if (stats.empty()) {
    t.allocations = rec.allocations;
    t.frees = rec.frees;
    for (AllocatorTotals& at : t.allocators) {
      at.allocate_calls = rec.allocations;
      at.deallocate_calls = rec.frees;
    }
  }
  t.peak_live_bytes = rec.peak_live_bytes;
  t.final_live_bytes = rec.last_mark.live_bytes;
}

void fill_findings(Report& report, const Recording& rec, const Diagnosis& diagnosis, const SiteStack& stack,
                   const FrameResolver& resolve) {
  report.total_growth = diagnosis.total_growth;
  report.total_retained = diagnosis.total_retained;
  report.timeline.stride = rec.mark_stride;
  report.timeline.samples = rec.marks;
  report.timeline.after_teardown = rec.final_mark;
  const bool judged = judged_at_end(rec.end);

  Summary& summary = report.summary;
  report.omitted_sites = diagnosis.omitted;
  summary.bounded_sites = diagnosis.omitted.sites;
  report.sites.reserve(report.sites.size() + diagnosis.sites.size());
  const PythonUsersCode mine = python_users_code(report.run);
  for (const SiteFinding& f : diagnosis.sites) {
    summary.leak_sites += f.verdict == Verdict::kLeak;
    summary.growth_sites += f.verdict == Verdict::kGrowth;
    summary.retained_sites += f.verdict == Verdict::kRetained;
    summary.bounded_sites += f.verdict == Verdict::kBounded;
    SiteReport s;
    s.id = f.site.value();
    s.verdict = to_string(f.verdict);
    s.reason = f.reason;
    s.allocator = rec.allocator_names[f.allocator];
    s.frames = site_frames(stack(f.site), resolve);
    s.label = site_label(s.frames, mine);
    s.allocations = f.allocations;
    s.frees = f.frees;
    s.bytes_allocated = f.bytes_allocated;
    s.peak_live_bytes = f.peak_live_bytes;
    s.final_live_bytes = f.final_live_bytes;
    s.leaked_bytes = f.leaked_bytes;
    s.leaked_blocks = f.leaked_blocks;
    (judged ? s.reachable_at_exit_bytes : s.unjudged_at_exit_bytes) = f.unfreed_bytes;
    (judged ? s.reachable_at_exit_blocks : s.unjudged_at_exit_blocks) = f.unfreed_blocks;
    s.unjudged_at_exit_bytes += f.unjudged_bytes;
    s.unjudged_at_exit_blocks += f.unjudged_blocks;
    s.growth = f.growth;
    s.retained = f.retained;
    s.live_bytes_at_samples = f.mark_live_bytes;
    report.sites.push_back(std::move(s));
  }
  // A small report spells every series out; a large one leaves a constant series empty.
  if (report.sites.size() <= kLargeReportSites) {
    for (SiteReport& s : report.sites) {
      if (s.live_bytes_at_samples.empty()) s.live_bytes_at_samples.assign(rec.marks.size(), s.final_live_bytes);
    }
  }
  if (!report.sites.empty()) {
    summary.verdict = report.sites.front().verdict;
    summary.sentence = summary_sentence(report.sites.front(), report);
  } else {
    summary.sentence = "bounded: no allocations were tracked";
  }
}

}  // namespace

std::vector<Frame> site_frames(const std::vector<std::uintptr_t>& addresses, const FrameResolver& resolve) {
  std::vector<Frame> frames;
  frames.reserve(addresses.size());
  for (const std::uintptr_t address : addresses) {
    resolve(address, frames);
    if (!frames.empty() && frames.back().function == "main") break;
  }
  return frames;
}

void fill_report(Report& report, const Recording& recording, const ClassifierOptions& options,
                 const std::vector<AllocatorStats>& stats, const SiteStack& stack, const FrameResolver& resolve,
                 std::size_t max_sites, const SiteJudgements* judged) {
  fill_totals(report, recording, stats);
  Diagnosis diagnosis = judged != nullptr ? classify(recording, options, max_sites, step_words(report.run), *judged)
                                          : classify(recording, options, max_sites, step_words(report.run));
  end_profile::lap("classify");
  fill_findings(report, recording, diagnosis, stack, resolve);
  end_profile::lap("findings");
}

void fill_untracked_totals(Report& report, const std::vector<AllocatorInfo>& allocators,
                           const std::vector<AllocatorStats>& stats) {
  Totals& t = report.totals;
  for (std::size_t a = 0; a < allocators.size() && a < stats.size(); ++a) {
    AllocatorTotals at;
    at.name = allocators[a].name;
    at.space = space_name(allocators[a].space);
    at.peak_in_use_bytes = stats[a].bytes_in_use.peak;
    at.peak_reserved_bytes = stats[a].bytes_reserved.peak;
    at.allocate_calls = stats[a].allocate_calls;
    at.deallocate_calls = stats[a].deallocate_calls;
    // Untracked: the allocators' own figures are all there is.
    at.peak_live_bytes = stats[a].bytes_in_use.peak;
    at.leaked_bytes = stats[a].bytes_in_use.current;
    at.leaked_blocks = stats[a].blocks_in_use.current;
    if (allocators[a].space == MemorySpace::kHost) add_reserve(t.peak_reserved_bytes, at.peak_reserved_bytes);
    t.leaked_bytes += at.leaked_bytes;
    t.leaked_blocks += at.leaked_blocks;
    t.allocations += at.allocate_calls;
    t.frees += at.deallocate_calls;
    t.peak_live_bytes += at.peak_live_bytes;
    t.allocators.push_back(at);
  }
}

}  // namespace tleak::diagnosis
