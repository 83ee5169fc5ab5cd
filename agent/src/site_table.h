// The agent's interned stacks: the same return addresses always get the same site id, a dense
// small integer that the stream's records carry instead of the frames. Lives in reserved pages
// (MAP_NORESERVE) sized for the worst case, so it never reallocates and never calls malloc.
// Threads look sites up first in their own cache (ThreadState); this table is only consulted, under
// its lock, on a miss.
#pragma once

#include <cstdint>

#include "tleak/agent/protocol.h"
#include "tleak/detail/spin_lock.h"

namespace tleak::agent {

class SiteTable {
 public:
  static constexpr std::uint32_t kMaxSites = agent::kMaxSites;
  // Where stacks go once the table is full: one site with no frames.
  static constexpr std::uint32_t kOverflowSite = 0;

  bool init();

  // Never 0, so a zeroed cache entry is empty.
  static std::uint64_t hash(const std::uint64_t* frames, std::uint32_t depth);

  // The stack's site; `*is_new` is set when this call created it (the caller then sends it).
  std::uint32_t intern(const std::uint64_t* frames, std::uint32_t depth, std::uint64_t hash,
                       bool* is_new);

 private:
  struct Slot {
    std::uint64_t hash;
    std::uint32_t site;  // 0: empty (site 0 is the overflow site, never stored)
    std::uint32_t depth;
    std::uint64_t offset;  // into frames_
  };
  static constexpr std::uint64_t kSlots = std::uint64_t{kMaxSites} * 2;
  static constexpr std::uint64_t kMaxFrameWords = std::uint64_t{kMaxSites} * 24;

  detail::SpinLock lock_;
  Slot* slots_ = nullptr;
  std::uint64_t* frames_ = nullptr;
  std::uint64_t frame_words_ = 0;
  std::uint32_t next_site_ = 1;
};

}  // namespace tleak::agent
