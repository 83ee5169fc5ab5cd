#include "tleak/diagnosis/recorder.h"

#include <algorithm>
#include <stdexcept>

namespace tleak::diagnosis {

Recorder::Recorder(std::vector<AllocatorInfo> allocators, RecorderLimits limits)
    : allocator_count_(allocators.size()), limits_(limits), recording_(limits.total_points) {
  // A site record keeps its allocator and first mark in 32 bits (SiteRecord).
  if (allocator_count_ > UINT32_MAX || limits.max_mark_samples > UINT32_MAX) {
    throw std::invalid_argument("more allocators or mark samples than a site record can name");
  }
  recording_.drag_measured = limits.uses_reported;
  for (AllocatorInfo& allocator : allocators) {
    recording_.allocator_names.push_back(std::move(allocator.name));
    recording_.allocator_spaces.push_back(allocator.space);
  }
  const std::size_t n = allocator_count_;
  allocator_live_bytes_.assign(n, 0);
  recording_.allocator_peak_live_bytes.assign(n, 0);
  recording_.allocator_peak_reserved_bytes.assign(n, 0);
  recording_.allocator_peak_unused_reserved_bytes.assign(n, 0);
}

void Recorder::unknown_allocator() {
  throw std::logic_error("event from an allocator the recorder does not know");
}

void Recorder::uses_reported_error() {
  throw std::logic_error("Recorder::allocated or freed from a source that reports uses");
}

SiteRecord& Recorder::add_sites(SiteId id, std::size_t allocator) {
  auto& sites = recording_.sites;
  while (sites.size() <= id.value()) {
    sites.emplace_back(SiteId(static_cast<std::uint32_t>(sites.size())));
    if (limits_.uses_reported) sites.back().uses.emplace(limits_.site_points);
    // A site first seen now had nothing live at every earlier sample.
    sites.back().first_mark = static_cast<std::uint32_t>(recording_.marks.size());
    sites.back().allocator = static_cast<std::uint32_t>(allocator);
    site_records_.push_back(&sites.back());
  }
  return sites[id.value()];
}

void Recorder::on_allocate(const BlockInfo& block) {
  const auto lock = hold();
  SiteRecord& s = count_allocation(block.site, allocator_index(block.allocator), block.size);
  if (limits_.uses_reported) {
    const auto size = static_cast<std::int64_t>(block.size);
    const std::uint64_t t = block.allocated.event;
    s.uses->needed.add_from(t, size);
    recording_.total_needed.add_from(t, size);
  }
}

void Recorder::on_free(const FreeEvent& event) {
  const auto lock = hold();
  const BlockInfo& block = event.block;
  SiteRecord& s = count_free(block.site, allocator_index(block.allocator), block.size);
  const auto size = static_cast<std::int64_t>(block.size);
  if (limits_.uses_reported) {
    // Needed through its last use (never used: only at its allocation).
    SiteUses& u = *s.uses;
    u.needed.add_from(block.last_use.event + 1, -size);
    recording_.total_needed.add_from(block.last_use.event + 1, -size);
    const std::uint64_t drag_ops = event.freed.clock - block.last_use.clock;
    const std::uint64_t drag_iterations = event.freed.iteration - block.last_use.iteration;
    u.drag_ops_max = std::max(u.drag_ops_max, drag_ops);
    u.drag_iterations_max = std::max(u.drag_iterations_max, drag_iterations);
    u.drag_ops_weighted_sum += static_cast<double>(block.size) * static_cast<double>(drag_ops);
    u.lifetime_ops_weighted_sum +=
        static_cast<double>(block.size) * static_cast<double>(event.freed.clock - block.allocated.clock);
    u.drag_weight_bytes += block.size;
    // Held dead from the event after its last use until its free, if an op began in between.
    if (drag_ops > 0) {
      u.dead.add_interval(block.last_use.event + 1, event.freed.event - 1, size);
      recording_.total_dead.add_interval(block.last_use.event + 1, event.freed.event - 1, size);
    }
  }
}

MarkSample Recorder::sample(std::uint64_t iteration, std::uint64_t clock,
                            const std::vector<AllocatorStats>& stats) const {
  MarkSample m;
  m.iteration = iteration;
  m.clock = clock;
  m.live_bytes = live_bytes_;
  m.live_blocks = live_blocks_;
  m.allocator_live_bytes = allocator_live_bytes_;
  for (const AllocatorStats& s : stats) m.allocator_reserved_bytes.push_back(s.bytes_reserved.current);
  return m;
}

void Recorder::mark(std::uint64_t iteration, std::uint64_t clock,
                    const std::vector<AllocatorStats>& stats) {
  const auto lock = hold();
  ++recording_.iterations;
  for (std::size_t a = 0; a < stats.size() && a < allocator_count_; ++a) {
    recording_.allocator_peak_reserved_bytes[a] =
        std::max(recording_.allocator_peak_reserved_bytes[a], stats[a].bytes_reserved.peak);
    recording_.allocator_peak_unused_reserved_bytes[a] =
        std::max(recording_.allocator_peak_unused_reserved_bytes[a],
                 stats[a].bytes_reserved.current - stats[a].bytes_in_use.current);
  }
  recording_.last_mark = sample(iteration, clock, stats);
  // Only sites that changed since the last kept mark can read differently now. One pass over them
  // (a program's time samples can each find a hundred thousand, scattered over its sites).
  if ((recording_.iterations - 1) % recording_.mark_stride != 0) {
    for (const std::uint32_t id : dirty_) recording_.sites[id].last_mark_live_bytes = recording_.sites[id].live_bytes;
    return;
  }
  const std::size_t index = recording_.marks.size();
  recording_.marks.push_back(recording_.last_mark);
  for (const std::uint32_t id : dirty_) {
    SiteRecord& s = recording_.sites[id];
    s.last_mark_live_bytes = s.live_bytes;
    s.dirty = false;
    if (s.varies) continue;
    if (index == s.first_mark) {
      s.flat_value = s.live_bytes;  // its first sample
    } else if (s.live_bytes != s.flat_value) {
      s.mark_live_bytes = s.series(index);
      s.varies = true;
      varying_.push_back(id);
    }
  }
  dirty_.clear();
  for (const std::uint32_t id : varying_) recording_.sites[id].mark_live_bytes.push_back(recording_.sites[id].live_bytes);
  if (recording_.marks.size() < limits_.max_mark_samples) return;
  // Full: keep every other sample (the first of each pair) and sample half as often.
  const auto thin = [](auto& series) {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < series.size(); i += 2, ++kept) {
      if (i != kept) series[kept] = std::move(series[i]);  // never onto itself: that empties it
    }
    series.resize(kept);
  };
  thin(recording_.marks);
  for (SiteRecord& s : recording_.sites) {
    if (s.varies) {
      thin(s.mark_live_bytes.values());
    } else {
      s.first_mark = (s.first_mark + 1) / 2;  // the first kept sample at or after it
    }
  }
  recording_.mark_stride *= 2;
}

void Recorder::clear_marks() {
  const auto lock = hold();
  recording_.marks.clear();
  recording_.mark_stride = 1;
  recording_.iterations = 0;
  recording_.last_mark = MarkSample{};
  dirty_.clear();
  varying_.clear();
  for (SiteRecord& s : recording_.sites) {
    s.mark_live_bytes.clear();
    s.varies = false;
    s.first_mark = 0;
    s.flat_value = 0;
    s.last_mark_live_bytes = 0;
    s.dirty = false;
    touch(s);
  }
}

std::vector<std::int64_t> SiteRecord::series(std::size_t marks) const {
  std::vector<std::int64_t> values;
  series_into(marks, values);
  return values;
}

void SiteRecord::series_into(std::size_t marks, std::vector<std::int64_t>& out) const {
  if (varies) {
    out.assign(mark_live_bytes.begin(), mark_live_bytes.end());
    return;
  }
  out.assign(marks, flat_value);
  std::fill(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(first_mark, marks)), 0);
}

Recording Recorder::snapshot(Stamp now) const {
  const auto lock = hold();
  Recording copy = recording_;
  copy.ended_at = now;
  copy.final_mark = sample(copy.iterations, now.clock, {});
  copy.end = RunEnd::kSnapshot;
  return copy;
}

const Recording& Recorder::set_end(Stamp at) {
  const auto lock = hold();
  recording_.ended_at = at;
  return recording_;
}

Recording Recorder::finish(Stamp at, const std::vector<AllocatorStats>& stats,
                           const std::vector<BlockInfo>& still_live, const std::vector<BlockInfo>& unfreed,
                           RunEnd end, const std::vector<BlockInfo>& unjudged) {
  const auto lock = hold();
  recording_.end = end;
  recording_.ended_at = at;
  recording_.final_mark = sample(recording_.iterations, at.clock, stats);
  const auto left = [&](const BlockInfo& block) {
    return LeakedBlock{block.site, allocator_index(block.allocator), block.size, block.uses};
  };
  for (const BlockInfo& block : unfreed) recording_.unfreed.push_back(left(block));
  for (const BlockInfo& block : unjudged) recording_.unjudged.push_back(left(block));
  for (const BlockInfo& block : still_live) {
    const LeakedBlock& leaked = recording_.leaked.emplace_back(left(block));
    const std::size_t a = leaked.allocator;
    if (limits_.uses_reported) {
      // Nothing frees it: dead from its last use to the end of the run.
      const auto size = static_cast<std::int64_t>(block.size);
      SiteUses& u = *site(block.site, a).uses;
      u.needed.add_from(block.last_use.event + 1, -size);
      recording_.total_needed.add_from(block.last_use.event + 1, -size);
      u.dead.add_interval(block.last_use.event + 1, at.event, size);
      u.drag_ops_weighted_sum += static_cast<double>(block.size) * static_cast<double>(at.clock - block.last_use.clock);
      u.lifetime_ops_weighted_sum += static_cast<double>(block.size) * static_cast<double>(at.clock - block.allocated.clock);
      recording_.total_dead.add_interval(block.last_use.event + 1, at.event, size);
    }
  }
  for (std::size_t a = 0; a < stats.size() && a < allocator_count_; ++a) {
    recording_.allocator_peak_reserved_bytes[a] =
        std::max(recording_.allocator_peak_reserved_bytes[a], stats[a].bytes_reserved.peak);
  }
  Recording done = std::move(recording_);
  // The site records went with it: none of them is this recorder's any more.
  recording_.sites.clear();
  site_records_.clear();
  return done;
}

}  // namespace tleak::diagnosis
