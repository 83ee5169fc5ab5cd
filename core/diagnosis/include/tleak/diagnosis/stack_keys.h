// A program's distinct stacks by the agent's hash of their frames (agent::SiteRecord's key): the
// site id each was given. Open addressing with linear probing, 16 bytes a slot (96 bits of the key:
// two different stacks of a million share them with probability about 10^-17), no node per stack.
#pragma once

#include <cstdint>
#include <vector>

namespace tleak::diagnosis {

class StackKeys {
 public:
  StackKeys() { clear(); }

  // The key's site, or 0 if it has none yet.
  std::uint32_t find(std::uint64_t a, std::uint64_t b) const { return slots_[slot_for(slots_, a, b)].site; }
  // Gives the key `site` (non-zero); the key must have none.
  void insert(std::uint64_t a, std::uint64_t b, std::uint32_t site) {
    if ((size_ + 1) * 4 > slots_.size() * 3) grow();
    slots_[slot_for(slots_, a, b)] = {a, static_cast<std::uint32_t>(b), site};
    ++size_;
  }
  // Asks the cache for the key's first slot, ahead of a find: a program's table is tens of
  // megabytes, and a new stack's key (most of them) would otherwise wait for memory.
  void prefetch(std::uint64_t a) const {
    __builtin_prefetch(&slots_[home(a) & (slots_.size() - 1)]);
  }
  std::size_t size() const { return size_; }
  void clear() {
    slots_.assign(1024, Slot{});
    size_ = 0;
  }

 private:
  struct Slot {
    std::uint64_t a = 0;
    std::uint32_t b = 0;     // the low half of the key's second word
    std::uint32_t site = 0;  // 0: empty
  };

  static std::size_t home(std::uint64_t a) { return static_cast<std::size_t>((a * 0x9e3779b97f4a7c15ull) >> 20); }
  // Where the key is, or the empty slot where it would go.
  static std::size_t slot_for(const std::vector<Slot>& slots, std::uint64_t a, std::uint64_t b) {
    const std::size_t mask = slots.size() - 1;
    for (std::size_t i = home(a) & mask;; i = (i + 1) & mask) {
      const Slot& s = slots[i];
      if (s.site == 0 || (s.a == a && s.b == static_cast<std::uint32_t>(b))) return i;
    }
  }
  void grow() {
    std::vector<Slot> bigger(slots_.size() * 2);
    for (const Slot& s : slots_) {
      if (s.site != 0) bigger[slot_for(bigger, s.a, s.b)] = s;
    }
    slots_.swap(bigger);
  }

  std::vector<Slot> slots_;
  std::size_t size_ = 0;
};

}  // namespace tleak::diagnosis
