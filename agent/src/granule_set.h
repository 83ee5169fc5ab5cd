// Which 1 MiB granules of the address space hold part of a live block: the exit scan's first
// question for every word it reads. Most words that pass the scan's range check are pointers into
// code, into an interpreter's own arenas or into mappings of no block; one probe here turns them
// away before the search of the sorted blocks (a dozen dependent reads). Memory is the caller's
// (agent pages, never malloc).
#pragma once

#include <cstdint>

namespace tleak::agent {

class GranuleSet {
 public:
  static constexpr int kShift = 20;

  // Granules the blocks [start, start + size) cover, a zero-size block its start's.
  static std::uint64_t granules_of(std::uint64_t start, std::uint64_t size) {
    return last_granule(start, size) - (start >> kShift) + 1;
  }
  // Slots for `granules` granules: a power of two, at most half full.
  static std::uint64_t capacity_for(std::uint64_t granules) {
    std::uint64_t capacity = 64;
    while (capacity < granules * 2) capacity *= 2;
    return capacity;
  }

  // `slots`: `capacity` zeroed words, capacity from capacity_for().
  GranuleSet(std::uint64_t* slots, std::uint64_t capacity) : slots_(slots), mask_(capacity - 1) {}

  void add(std::uint64_t start, std::uint64_t size) {
    const std::uint64_t last = last_granule(start, size);
    for (std::uint64_t g = start >> kShift; g <= last; ++g) {
      std::uint64_t i = slot_of(g);
      while (slots_[i] != 0 && slots_[i] != g + 1) i = (i + 1) & mask_;
      slots_[i] = g + 1;  // 0 marks an empty slot
    }
  }

  bool contains(std::uint64_t address) const {
    const std::uint64_t g = address >> kShift;
    for (std::uint64_t i = slot_of(g);; i = (i + 1) & mask_) {
      if (slots_[i] == g + 1) return true;
      if (slots_[i] == 0) return false;
    }
  }

 private:
  static std::uint64_t last_granule(std::uint64_t start, std::uint64_t size) {
    return (size > 0 ? start + size - 1 : start) >> kShift;
  }
  std::uint64_t slot_of(std::uint64_t granule) const { return (granule * 0x9e3779b97f4a7c15ull >> 32) & mask_; }

  std::uint64_t* slots_;
  std::uint64_t mask_;
};

}  // namespace tleak::agent
