// Interned allocation stacks: the same return addresses always get the same SiteId, a dense
// small integer. Open addressing on a precomputed hash; a known stack is found without allocating.
// Not synchronized: TrackingContext guards it with its lock.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tleak/ids.h"

namespace tleak {

class StackTable {
 public:
  StackTable();

  // Computed outside any lock by the caller.
  static std::uint64_t hash(std::span<const std::uintptr_t> frames);

  SiteId intern(std::span<const std::uintptr_t> frames, std::uint64_t hash);
  SiteId intern(std::span<const std::uintptr_t> frames) { return intern(frames, hash(frames)); }

  // Valid until the next intern().
  std::span<const std::uintptr_t> frames(SiteId site) const;
  std::size_t size() const { return entries_.size(); }

 private:
  struct Slot {
    std::uint64_t hash = 0;
    std::uint32_t site_plus_one = 0;  // 0: empty
  };
  struct Entry {
    std::uint32_t offset;
    std::uint32_t depth;
  };
  void grow();

  std::vector<Slot> slots_;  // size is a power of two, at most half full
  std::vector<Entry> entries_;
  std::vector<std::uintptr_t> frames_;
};

}  // namespace tleak
