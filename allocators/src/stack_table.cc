#include "tleak/stack_table.h"

#include <algorithm>

namespace tleak {

StackTable::StackTable() : slots_(1024) {
  entries_.reserve(512);
  frames_.reserve(512 * 16);
}

std::uint64_t StackTable::hash(std::span<const std::uintptr_t> frames) {
  // Multiply-xorshift per word (the finalizer of splitmix64): cheap and well mixed for addresses
  // that differ only in low bits.
  std::uint64_t h = 0x9e3779b97f4a7c15ull ^ frames.size();
  for (std::uintptr_t frame : frames) {
    h ^= frame;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 31;
  }
  return h;
}

SiteId StackTable::intern(std::span<const std::uintptr_t> frames, std::uint64_t hash) {
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = hash & mask;; i = (i + 1) & mask) {
    Slot& slot = slots_[i];
    if (slot.site_plus_one == 0) break;
    if (slot.hash != hash) continue;
    const Entry& entry = entries_[slot.site_plus_one - 1];
    if (entry.depth == frames.size() &&
        std::equal(frames.begin(), frames.end(), frames_.begin() + entry.offset)) {
      return SiteId(slot.site_plus_one - 1);
    }
  }
  // A new stack: the only path that may allocate.
  if ((entries_.size() + 1) * 2 > slots_.size()) grow();
  const auto site = static_cast<std::uint32_t>(entries_.size());
  entries_.push_back({static_cast<std::uint32_t>(frames_.size()),
                      static_cast<std::uint32_t>(frames.size())});
  frames_.insert(frames_.end(), frames.begin(), frames.end());
  const std::size_t new_mask = slots_.size() - 1;
  std::size_t i = hash & new_mask;
  while (slots_[i].site_plus_one != 0) i = (i + 1) & new_mask;
  slots_[i] = Slot{hash, site + 1};
  return SiteId(site);
}

void StackTable::grow() {
  std::vector<Slot> old(slots_.size() * 2);
  old.swap(slots_);
  const std::size_t mask = slots_.size() - 1;
  for (const Slot& slot : old) {
    if (slot.site_plus_one == 0) continue;
    std::size_t i = slot.hash & mask;
    while (slots_[i].site_plus_one != 0) i = (i + 1) & mask;
    slots_[i] = slot;
  }
}

std::span<const std::uintptr_t> StackTable::frames(SiteId site) const {
  const Entry& entry = entries_.at(site.value());
  return {frames_.data() + entry.offset, entry.depth};
}

}  // namespace tleak
