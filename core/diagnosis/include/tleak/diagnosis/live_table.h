// Live blocks of a program by address: the agent source's hottest structure (an insert and an
// erase per allocation). Open addressing with linear probing and backward-shift deletion, so no
// tombstones build up and no node is allocated per block, as std::unordered_map would. Each slot
// holds its address and its value side by side: an insert or a take touches one cache line, not a
// line of keys and another of values.
#pragma once

#include <cstdint>
#include <vector>

namespace tleak::diagnosis {

template <class Value>
class LiveTable {
 public:
  LiveTable() { clear(); }

  // Address 0 is never a block.
  Value* find(std::uint64_t address) {
    for (std::size_t i = slot_of(address);; i = (i + 1) & mask_) {
      if (slots_[i].key == address) return &slots_[i].value;
      if (slots_[i].key == 0) return nullptr;
    }
  }
  // False (and nothing changed) if the address is already there.
  bool insert(std::uint64_t address, const Value& value) {
    if ((size_ + 1) * 4 > slots_.size() * 3) grow();
    std::size_t i = slot_of(address);
    for (; slots_[i].key != 0; i = (i + 1) & mask_) {
      if (slots_[i].key == address) return false;
    }
    slots_[i] = {address, value};
    ++size_;
    return true;
  }
  // Removes and returns through `out`; false if absent.
  bool take(std::uint64_t address, Value* out) {
    std::size_t i = slot_of(address);
    for (;; i = (i + 1) & mask_) {
      if (slots_[i].key == address) break;
      if (slots_[i].key == 0) return false;
    }
    *out = slots_[i].value;
    // Backward shift: move later entries of the cluster into the hole when their home allows it.
    for (std::size_t j = (i + 1) & mask_; slots_[j].key != 0; j = (j + 1) & mask_) {
      const std::size_t home = slot_of(slots_[j].key);
      const bool movable = i <= j ? (home <= i || home > j) : (home <= i && home > j);
      if (!movable) continue;
      slots_[i] = slots_[j];
      i = j;
    }
    slots_[i].key = 0;
    --size_;
    return true;
  }
  // Asks the cache for the address's home slot, ahead of a find, insert or take: a program's
  // table is tens of megabytes, and each record of its stream would otherwise wait for memory.
  void prefetch(std::uint64_t address) const { __builtin_prefetch(&slots_[slot_of(address)]); }
  std::size_t size() const { return size_; }
  template <class F>
  void for_each(F&& f) const {
    for (const Slot& slot : slots_) {
      if (slot.key != 0) f(slot.key, slot.value);
    }
  }
  void clear() {
    slots_.assign(1024, Slot{});
    mask_ = 1023;
    size_ = 0;
  }

 private:
  struct Slot {
    std::uint64_t key = 0;  // 0: empty
    Value value{};
  };

  std::size_t slot_of(std::uint64_t address) const {
    std::uint64_t h = address * 0x9e3779b97f4a7c15ull;
    return static_cast<std::size_t>(h >> 20) & mask_;
  }
  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    mask_ = slots_.size() - 1;
    size_ = 0;
    for (const Slot& slot : old) {
      if (slot.key != 0) insert(slot.key, slot.value);
    }
  }

  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
};

}  // namespace tleak::diagnosis
