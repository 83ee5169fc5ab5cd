// The diagnosis engine's memory of a run: an EventSink that folds the tracker's events into
// per-site and per-allocator figures as they arrive, plus samples taken at iteration marks.
// Nothing here grows with the number of events: per-site state is fixed-size, mark samples are
// thinned (every other one dropped, stride doubled) when they reach their cap, and dead-memory
// timelines coarsen the same way (PointTimeline).
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "tleak/allocator.h"
#include "tleak/detail/spin_lock.h"
#include "tleak/diagnosis/point_timeline.h"
#include "tleak/ids.h"
#include "tleak/tracking_events.h"

namespace tleak::diagnosis {

struct RecorderLimits {
  std::size_t max_mark_samples = 512;   // per series; thinned beyond
  // Whether the source reports uses of blocks (the tensor runtime does; a program's agent does
  // not). Without them no block can be called dead before its free: no drag is measured and no
  // event timeline is kept (the peak freed at last use is the peak itself).
  bool uses_reported = true;
  std::size_t site_points = 512;        // event points per site timeline
  std::size_t total_points = 4096;      // event points for the whole-run timeline
  // Every call comes from one thread (a program's stream, decoded by tleak's reader): no lock. Its
  // atomic exchange was three quarters of the time of an allocation's bookkeeping there.
  bool one_thread = false;
};

// What one iteration mark saw.
struct MarkSample {
  std::uint64_t iteration = 0;
  std::uint64_t clock = 0;
  std::int64_t live_bytes = 0;
  std::int64_t live_blocks = 0;
  std::vector<std::int64_t> allocator_live_bytes;      // per registered allocator, in order
  std::vector<std::int64_t> allocator_reserved_bytes;  // per registered allocator, in order
};

// What a site's uses tell (drag, and the bytes needed and dead over the event order), kept only
// when the source reports uses: the tensor runtime does; a program's agent does not, and its
// sites come by the hundred thousand, each of which would carry 120 unused bytes.
struct SiteUses {
  // Drag of freed blocks (free minus last use).
  std::uint64_t drag_ops_max = 0;
  std::uint64_t drag_iterations_max = 0;
  double drag_ops_weighted_sum = 0;      // sum of size * drag_ops, for the byte-weighted mean
  double lifetime_ops_weighted_sum = 0;  // sum of size * (free - allocation), same blocks
  std::uint64_t drag_weight_bytes = 0;
  // Over the event order: bytes still needed (from allocation through last use: what would be
  // live had every block been freed right after its last use), and bytes dead but held across
  // at least one op boundary (a block freed inside the op that last used it was never held).
  PointTimeline needed;
  PointTimeline dead;

  explicit SiteUses(std::size_t points) : needed(points), dead(points) {}
};

// A pointer that copies what it points to when it is copied (a recording's snapshot is a copy).
template <class T>
class DeepCopied {
 public:
  DeepCopied() = default;
  DeepCopied(const DeepCopied& o) : p_(o.p_ ? std::make_unique<T>(*o.p_) : nullptr) {}
  DeepCopied(DeepCopied&&) noexcept = default;
  DeepCopied& operator=(const DeepCopied& o) {
    p_ = o.p_ ? std::make_unique<T>(*o.p_) : nullptr;
    return *this;
  }
  DeepCopied& operator=(DeepCopied&&) noexcept = default;
  template <class... Args>
  void emplace(Args&&... args) { p_ = std::make_unique<T>(std::forward<Args>(args)...); }
  T* get() const { return p_.get(); }
  T* operator->() const { return p_.get(); }
  T& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }

 private:
  std::unique_ptr<T> p_;
};

// A site's live bytes at the kept marks, once they vary (SiteRecord::varies). Behind a pointer:
// most sites of a program never vary, and an empty std::vector in each of a PyTorch program's
// 686,000 site records took 11 MB more than a pointer.
class MarkSeries {
 public:
  std::size_t size() const { return values_ ? values_->size() : 0; }
  bool empty() const { return size() == 0; }
  std::int64_t operator[](std::size_t i) const { return (*values_)[i]; }
  const std::int64_t* begin() const { return values_ ? values_->data() : nullptr; }
  const std::int64_t* end() const { return values_ ? values_->data() + values_->size() : nullptr; }
  void push_back(std::int64_t value) { values().push_back(value); }
  void clear() { values_ = {}; }
  MarkSeries& operator=(std::vector<std::int64_t> values) {
    values_.emplace(std::move(values));
    return *this;
  }
  // The values themselves, for changes beyond an append (the recorder's thinning).
  std::vector<std::int64_t>& values() {
    if (!values_) values_.emplace();
    return *values_;
  }

 private:
  DeepCopied<std::vector<std::int64_t>> values_;
};

// 96 bytes: a program's hundreds of thousands of sites are read in full at its end (the PyTorch
// loop's, 686,000, took 88 MB at 128 bytes each).
struct SiteRecord {
  SiteId site;
  std::uint32_t allocator = 0;  // index of the allocator of its first block
  std::uint64_t allocations = 0;
  std::uint64_t frees = 0;
  std::uint64_t bytes_allocated = 0;
  std::int64_t live_bytes = 0;
  std::int64_t live_blocks = 0;
  std::int64_t peak_live_bytes = 0;
  // Only when the source reports uses (RecorderLimits::uses_reported).
  DeepCopied<SiteUses> uses;
  // Live bytes at the kept marks, stored only once they vary (most sites of a program never do):
  // while `mark_live_bytes` is empty the site read 0 at every kept mark before `first_mark` and
  // `flat_value` at every one from it on. series() gives the values either way.
  MarkSeries mark_live_bytes;
  std::uint32_t first_mark = 0;  // below RecorderLimits::max_mark_samples
  bool varies = false;
  bool dirty = false;                    // live bytes changed since the last kept mark
  std::int64_t flat_value = 0;
  std::int64_t last_mark_live_bytes = 0;  // at the last iteration mark, kept in marks or not

  // Aligned with Recording::marks (`marks` of them).
  std::vector<std::int64_t> series(std::size_t marks) const;
  // The same into `out` (replacing what it held): one buffer for a pass over many sites.
  void series_into(std::size_t marks, std::vector<std::int64_t>& out) const;
  // Whether series() is the same value at every mark.
  bool flat() const { return !varies && first_mark == 0; }

  explicit SiteRecord(SiteId id) : site(id) {}
};
static_assert(sizeof(SiteRecord) == 96, "a site record's size counts: see above");

struct LeakedBlock {
  SiteId site;
  std::size_t allocator;
  std::size_t size;
  std::uint32_t uses;
};

// How the run ended, which decides what a block still allocated at the end means.
enum class RunEnd {
  kTeardown,    // the workload's runtime was torn down: anything left is a true leak
  kExitScan,    // a program exited and its heap was scanned: unreachable blocks are leaks
  kNoExitScan,  // a program ended without a scan (killed, _exit): nothing left can be judged
  kSnapshot,    // a snapshot mid-run: nothing has ended
};

// Whether blocks still allocated at such an end were judged (leaked, or reachable at exit).
inline bool judged_at_end(RunEnd end) { return end == RunEnd::kExitScan || end == RunEnd::kTeardown; }

// Everything the classifier needs, taken once the run is over.
struct Recording {
  std::vector<std::string> allocator_names;
  std::vector<MemorySpace> allocator_spaces;
  std::vector<MarkSample> marks;  // thinned: every mark_stride-th iteration mark
  std::uint64_t mark_stride = 1;
  std::uint64_t iterations = 0;   // iteration marks seen
  MarkSample last_mark;           // the last iteration mark, even when thinning did not keep it
  MarkSample final_mark;          // after teardown
  Stamp ended_at;  // when finish() or snapshot() was called
  // Indexed by SiteId. A deque: a program's sites arrive by the hundred thousand, and a vector
  // would move them all every time it grew.
  std::deque<SiteRecord> sites;
  std::vector<std::int64_t> allocator_peak_live_bytes;
  std::vector<std::int64_t> allocator_peak_reserved_bytes;
  std::vector<std::int64_t> allocator_peak_unused_reserved_bytes;  // reserved - in use, at marks
  std::uint64_t allocations = 0;
  std::uint64_t frees = 0;
  std::int64_t peak_live_bytes = 0;
  PointTimeline total_needed;
  PointTimeline total_dead;
  std::vector<LeakedBlock> leaked;
  // Still allocated at the end but not leaked: reachable at a program's exit, or not judged.
  std::vector<LeakedBlock> unfreed;
  // Still allocated at a program's exit that was scanned, but judged by no scan: allocated after the
  // scan's list was made, by a thread still running as the program exited.
  std::vector<LeakedBlock> unjudged;
  RunEnd end = RunEnd::kTeardown;
  // The source reported uses (RecorderLimits::uses_reported): drag and dead bytes are measured.
  bool drag_measured = true;

  explicit Recording(std::size_t points) : total_needed(points), total_dead(points) {}
};

class Recorder final : public EventSink {
 public:
  // `allocators` indexed by the AllocatorId that events carry.
  explicit Recorder(std::vector<AllocatorInfo> allocators, RecorderLimits limits = {});

  void on_allocate(const BlockInfo& block) override;
  void on_free(const FreeEvent& event) override;
  // on_allocate and on_free for a source that reports no uses (RecorderLimits::uses_reported
  // unset: a program's agent), from the only figures of a block they then read: no BlockInfo is
  // built for each of the stream's millions of events (zeroing one was a fifth of their cost).
  // Defined in this header: a program's stream calls them for every one of its millions of events,
  // and their calls (three deep, each out of line) were a fifth of their cost.
  inline void allocated(SiteId site, AllocatorId allocator, std::uint64_t size);
  inline void freed(SiteId site, AllocatorId allocator, std::uint64_t size);
  // Asks the cache for a site's record ahead of an event of it (a program's sites are a hundred
  // megabytes of records: each event would otherwise wait for memory).
  void prefetch(SiteId site) const {
    if (site.value() < site_records_.size()) __builtin_prefetch(site_records_[site.value()]);
  }

  // End of one iteration of the workload's loop. `stats` are the allocators' own, in registration
  // order (for reserved bytes); empty when the source has none (a program's malloc).
  void mark(std::uint64_t iteration, std::uint64_t clock, const std::vector<AllocatorStats>& stats);
  // Forgets the samples taken so far: a program that samples by time until its first own mark
  // switches its clock to marks.
  void clear_marks();
  // After teardown: `leaked` are true leaks; `unfreed` were still allocated but are not leaks (see
  // RunEnd). Ends the recording.
  Recording finish(Stamp at, const std::vector<AllocatorStats>& stats,
                   const std::vector<BlockInfo>& leaked, const std::vector<BlockInfo>& unfreed = {},
                   RunEnd end = RunEnd::kTeardown, const std::vector<BlockInfo>& unjudged = {});
  // The recording so far, as if it ended now with nothing leaked; the recorder goes on.
  Recording snapshot(Stamp now) const;
  // Bytes of the blocks allocated and not freed, now.
  std::int64_t live_bytes() const {
    const auto lock = hold();
    return live_bytes_;
  }
  // Sets the recording's end to `at`, as finish() would, and returns the recording as it stands,
  // not copied: for a reader while no event comes (a program's sites judged while it scans at
  // exit). finish() sets the end again.
  const Recording& set_end(Stamp at);

 private:
  std::size_t allocator_index(AllocatorId allocator) const;
  [[noreturn]] static void unknown_allocator();
  [[noreturn]] static void uses_reported_error();
  SiteRecord& site(SiteId id, std::size_t allocator);
  // Adds the records of the sites up to `id`, first seen now.
  SiteRecord& add_sites(SiteId id, std::size_t allocator);
  MarkSample sample(std::uint64_t iteration, std::uint64_t clock,
                    const std::vector<AllocatorStats>& stats) const;

  const std::size_t allocator_count_;
  const RecorderLimits limits_;
  // Taken inside the tracker's lock on every allocation and free: a spin lock, like the tracker's.
  mutable detail::SpinLock lock_;
  // lock_, unless RecorderLimits::one_thread.
  std::unique_lock<detail::SpinLock> hold() const;
  void touch(SiteRecord& s);
  // The counts of an allocation and of a free, uses aside. Call with hold() held.
  SiteRecord& count_allocation(SiteId site, std::size_t allocator, std::uint64_t size);
  SiteRecord& count_free(SiteId site, std::size_t allocator, std::uint64_t size);

  Recording recording_;
  // Each site's record in recording_.sites, by SiteId (a deque never moves what it holds): an
  // event finds its site in one load, where the deque's own size and index took a dozen
  // instructions, a seventh of a program's stream's time.
  std::vector<SiteRecord*> site_records_;
  std::vector<std::uint32_t> dirty_;   // sites whose live bytes changed since the last kept mark
  std::vector<std::uint32_t> varying_;  // sites whose series is stored value by value
  std::vector<std::int64_t> allocator_live_bytes_;
  std::int64_t live_bytes_ = 0;
  std::int64_t live_blocks_ = 0;
};

inline std::unique_lock<detail::SpinLock> Recorder::hold() const {
  return limits_.one_thread ? std::unique_lock<detail::SpinLock>() : std::unique_lock<detail::SpinLock>(lock_);
}

inline std::size_t Recorder::allocator_index(AllocatorId allocator) const {
  if (allocator.value() >= allocator_count_) unknown_allocator();
  return allocator.value();
}

inline SiteRecord& Recorder::site(SiteId id, std::size_t allocator) {
  if (id.value() < site_records_.size()) return *site_records_[id.value()];
  return add_sites(id, allocator);
}

inline void Recorder::touch(SiteRecord& s) {
  if (s.dirty) return;
  s.dirty = true;
  dirty_.push_back(s.site.value());
}

[[gnu::always_inline]] inline SiteRecord& Recorder::count_allocation(SiteId id, std::size_t a, std::uint64_t bytes) {
  SiteRecord& s = site(id, a);
  const auto size = static_cast<std::int64_t>(bytes);
  ++s.allocations;
  s.bytes_allocated += bytes;
  s.live_bytes += size;
  ++s.live_blocks;
  s.peak_live_bytes = std::max(s.peak_live_bytes, s.live_bytes);
  touch(s);
  ++recording_.allocations;
  live_bytes_ += size;
  ++live_blocks_;
  recording_.peak_live_bytes = std::max(recording_.peak_live_bytes, live_bytes_);
  allocator_live_bytes_[a] += size;
  recording_.allocator_peak_live_bytes[a] = std::max(recording_.allocator_peak_live_bytes[a], allocator_live_bytes_[a]);
  return s;
}

[[gnu::always_inline]] inline SiteRecord& Recorder::count_free(SiteId id, std::size_t a, std::uint64_t bytes) {
  SiteRecord& s = site(id, a);
  const auto size = static_cast<std::int64_t>(bytes);
  ++s.frees;
  s.live_bytes -= size;
  --s.live_blocks;
  touch(s);
  ++recording_.frees;
  live_bytes_ -= size;
  --live_blocks_;
  allocator_live_bytes_[a] -= size;
  return s;
}

[[gnu::always_inline]] inline void Recorder::allocated(SiteId site, AllocatorId allocator, std::uint64_t size) {
  if (limits_.uses_reported) uses_reported_error();
  const auto lock = hold();
  count_allocation(site, allocator_index(allocator), size);
}

[[gnu::always_inline]] inline void Recorder::freed(SiteId site, AllocatorId allocator, std::uint64_t size) {
  if (limits_.uses_reported) uses_reported_error();
  const auto lock = hold();
  count_free(site, allocator_index(allocator), size);
}

}  // namespace tleak::diagnosis
