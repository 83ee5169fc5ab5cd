#include "site_table.h"

#include "agent_memory.h"
#include "tleak/agent/stack_hash.h"

namespace tleak::agent {

bool SiteTable::init() {
  auto* slots = static_cast<Slot*>(map_pages(kFirstSlots * sizeof(Slot)));
  if (slots == nullptr) return false;
  capacity_ = kFirstSlots;
  slots_ = slots;
  return true;
}

StackKey SiteTable::key(const std::uint64_t* words, std::uint32_t count) {
  const StackHash h = stack_hash(words, count);
  return {h.a, h.b};
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
