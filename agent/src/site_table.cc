#include "site_table.h"

#include <cstring>

#include "agent_memory.h"

namespace tleak::agent {

bool SiteTable::init() {
  slots_ = static_cast<Slot*>(map_pages(kSlots * sizeof(Slot), /*reserve_only=*/true));
  frames_ = static_cast<std::uint64_t*>(map_pages(kMaxFrameWords * sizeof(std::uint64_t), true));
  return slots_ != nullptr && frames_ != nullptr;
}

std::uint64_t SiteTable::hash(const std::uint64_t* frames, std::uint32_t depth) {
  // The splitmix64 finalizer per word: addresses that differ in low bits spread well.
  std::uint64_t h = 0x9e3779b97f4a7c15ull ^ depth;
  for (std::uint32_t i = 0; i < depth; ++i) {
    h ^= frames[i];
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 31;
  }
  return h | 1;
}

std::uint32_t SiteTable::intern(const std::uint64_t* frames, std::uint32_t depth, std::uint64_t h,
                                bool* is_new) {
  *is_new = false;
  lock_.lock();
  std::uint64_t i = (h >> 1) & (kSlots - 1);  // the low bit is always set (hash() never returns 0)
  for (;; i = (i + 1) & (kSlots - 1)) {
    Slot& slot = slots_[i];
    if (slot.site == 0) break;
    if (slot.hash == h && slot.depth == depth &&
        std::memcmp(frames_ + slot.offset, frames, depth * sizeof(std::uint64_t)) == 0) {
      const std::uint32_t site = slot.site;
      lock_.unlock();
      return site;
    }
  }
  if (next_site_ >= kMaxSites || frame_words_ + depth > kMaxFrameWords) {
    lock_.unlock();
    return kOverflowSite;
  }
  Slot& slot = slots_[i];
  slot.hash = h;
  slot.depth = depth;
  slot.offset = frame_words_;
  std::memcpy(frames_ + frame_words_, frames, depth * sizeof(std::uint64_t));
  frame_words_ += depth;
  slot.site = next_site_++;
  const std::uint32_t site = slot.site;
  lock_.unlock();
  *is_new = true;
  return site;
}

}  // namespace tleak::agent
