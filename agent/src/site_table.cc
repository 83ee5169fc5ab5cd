#include "site_table.h"

#include <bit>

#include "agent_memory.h"

namespace tleak::agent {
namespace {

// MurmurHash3's finalizer: every input bit reaches every output bit.
std::uint64_t mix(std::uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}


}  // namespace

bool SiteTable::init() {
  auto* slots = static_cast<Slot*>(map_pages(kFirstSlots * sizeof(Slot)));
  if (slots == nullptr) return false;
  capacity_ = kFirstSlots;
  slots_ = slots;
  return true;
}

StackKey SiteTable::key(const std::uint64_t* words, std::uint32_t count) {
  // Four independent lanes, word i into lane i % 4: one multiply per word, but four chains in
  // flight instead of one long dependent chain (this runs for every allocation and every Python
  // frame of it, and a chain's multiplies were most of its time). Each lane keeps its words' order;
  // distinct odd multipliers and seeds keep lanes and positions apart. Then a full mix into two
  // halves that each depend on every lane.
  std::uint64_t lane[4] = {0x9e3779b97f4a7c15ull ^ count, 0xc2b2ae3d27d4eb4full + count,
                           0x165667b19e3779f9ull ^ (std::uint64_t{count} << 32), 0x27d4eb2f165667c5ull - count};
  constexpr std::uint64_t kMultiplier[4] = {0xbf58476d1ce4e5b9ull, 0x9fb21c651e98df25ull, 0x94d049bb133111ebull,
                                            0xd6e8feb86659fd93ull};
  std::uint32_t i = 0;
  for (; i + 4 <= count; i += 4) {
    for (int k = 0; k < 4; ++k) {
      lane[k] = (lane[k] ^ words[i + k]) * kMultiplier[k];
      lane[k] ^= lane[k] >> 29;
    }
  }
  for (int k = 0; i < count; ++i, ++k) {
    lane[k] = (lane[k] ^ words[i]) * kMultiplier[k];
    lane[k] ^= lane[k] >> 29;
  }
  const std::uint64_t a = mix(lane[0] ^ mix(lane[1] + 0x632be59bd9b4e019ull) ^ mix(lane[2] ^ std::rotl(lane[3], 23)));
  const std::uint64_t b = mix(lane[3] ^ mix(lane[2] + 0x8cb92ba72f3d8dd7ull) ^ mix(lane[0] - std::rotl(lane[1], 41)));
  return {a | 1, b};
}

SiteTable::Slot* SiteTable::find(Slot* slots, std::uint64_t capacity, const StackKey& key) const {
  const auto b = static_cast<std::uint32_t>(key.b);
  for (std::uint64_t i = (key.a >> 1) & (capacity - 1);; i = (i + 1) & (capacity - 1)) {
    if (slots[i].site == 0 || (slots[i].a == key.a && slots[i].b == b)) return &slots[i];
  }
}

bool SiteTable::grow() {
  Slot* const old_slots = slots_;
  const std::uint64_t old_capacity = capacity_;
  const std::uint64_t capacity = old_capacity * 2;
  if (capacity > kMaxSlots) return false;
  auto* slots = static_cast<Slot*>(map_pages(capacity * sizeof(Slot)));
  if (slots == nullptr) return false;
  for (std::uint64_t i = 0; i < old_capacity; ++i) {
    if (old_slots[i].site != 0) *find(slots, capacity, {old_slots[i].a, old_slots[i].b}) = old_slots[i];
  }
  slots_ = slots;
  capacity_ = capacity;
  unmap_pages(old_slots, old_capacity * sizeof(Slot));
  return true;
}

std::uint32_t SiteTable::intern(const StackKey& key, bool* is_new) {
  *is_new = false;
  lock_.lock();
  Slot* slot = find(slots_, capacity_, key);
  if (slot->site != 0) {
    const std::uint32_t site = slot->site;
    lock_.unlock();
    return site;
  }
  // Three quarters full: double first (a table that cannot grow takes no more sites).
  if (next_site_ >= kMaxSites ||
      (std::uint64_t{next_site_} * 4 >= capacity_ * 3 && !grow())) {
    lock_.unlock();
    return kOverflowSite;
  }
  slot = find(slots_, capacity_, key);
  slot->a = key.a;
  slot->b = static_cast<std::uint32_t>(key.b);
  slot->site = next_site_++;
  const std::uint32_t site = slot->site;
  lock_.unlock();
  *is_new = true;
  return site;
}

}  // namespace tleak::agent
