// Drives a Recorder with hand-written event streams, so the classifier can be proven on exact,
// known inputs apart from any allocator or scenario.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "tleak/diagnosis/classifier.h"
#include "tleak/diagnosis/recorder.h"

namespace tleak::diagnosis::testing {

class SyntheticRun {
 public:
  explicit SyntheticRun(RecorderLimits limits = {})
      : recorder_({AllocatorInfo{"heap", MemorySpace::kHost}}, limits) {}

  // A block of `size` bytes from `site`, allocated by the current op.
  std::uint64_t allocate(std::uint32_t site, std::size_t size) {
    BlockInfo block;
    block.block = BlockId(next_id_);
    block.site = SiteId(site);
    block.allocator = AllocatorId(0);
    block.address = reinterpret_cast<const void*>(0x1000 + 64 * next_id_);
    block.size = size;
    block.allocated = block.last_use = next_event();
    recorder_.on_allocate(block);
    live_[next_id_] = block;
    return next_id_++;
  }
  void use(std::uint64_t id) {
    live_.at(id).last_use = next_event();
    ++live_.at(id).uses;
  }
  void free(std::uint64_t id) {
    recorder_.on_free({live_.at(id), next_event()});
    live_.erase(id);
  }
  // Each op begun is a point of the event order too, as the tracker counts it.
  void tick(std::uint64_t ops = 1) {
    clock_ += ops;
    event_ += ops;
  }
  void mark() {
    ++iteration_;
    recorder_.mark(iteration_, clock_, {});
  }
  Recording finish() {
    std::vector<BlockInfo> still_live;
    for (const auto& [id, block] : live_) still_live.push_back(block);
    return recorder_.finish({clock_, iteration_, event_ + 1}, {}, still_live);
  }
  // A program's end: its exit scan found the blocks `reachable` still reachable, the rest leaked.
  Recording finish_with_exit_scan(const std::set<std::uint64_t>& reachable) {
    std::vector<BlockInfo> leaked, unfreed;
    for (const auto& [id, block] : live_) (reachable.contains(id) ? unfreed : leaked).push_back(block);
    return recorder_.finish({clock_, iteration_, event_ + 1}, {}, leaked, unfreed, RunEnd::kExitScan);
  }
  // The sites judged now, as a program's are while it scans at exit (before finish_with_exit_scan).
  SiteJudgements judge_sites_now(const ClassifierOptions& options = {}, std::size_t best_bounded_wanted = SIZE_MAX) {
    return judge_sites(recorder_.set_end({clock_, iteration_, event_ + 1}), options, best_bounded_wanted);
  }
  Diagnosis classify(const ClassifierOptions& options = {}) {
    const Recording recording = finish();
    return tleak::diagnosis::classify(recording, options);
  }

 private:
  Stamp next_event() { return {clock_, iteration_, ++event_}; }

  Recorder recorder_;
  std::map<std::uint64_t, BlockInfo> live_;
  std::uint64_t next_id_ = 0;
  std::uint64_t clock_ = 0;
  std::uint64_t iteration_ = 0;
  std::uint64_t event_ = 0;
};

// The finding for a site, or a failed test if the classifier did not report it.
inline const SiteFinding& finding(const Diagnosis& d, std::uint32_t site) {
  for (const SiteFinding& f : d.sites) {
    if (f.site == SiteId(site)) return f;
  }
  throw std::runtime_error("site " + std::to_string(site) + " not in the diagnosis");
}

}  // namespace tleak::diagnosis::testing
