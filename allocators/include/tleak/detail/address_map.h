// A map from block address to a value, for the tracker's table of live blocks: open addressing
// with linear probing and backward-shift deletion (no tombstones, so lookups stay short under
// churn). A steady state of inserts and erases never allocates; the table doubles when half full.
// Header-only so the tracker's hot path inlines it. Not synchronized.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tleak::detail {

template <class Value>
class AddressMap {
 public:
  explicit AddressMap(std::size_t initial_capacity = 1024) : slots_(round_up(initial_capacity)) {}

  std::size_t size() const { return size_; }

  // Inserts or overwrites. Address 0 is reserved as the empty marker and never stored.
  void insert(const void* address, const Value& value) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    const std::uintptr_t key = reinterpret_cast<std::uintptr_t>(address);
    std::size_t i = home(key);
    while (slots_[i].key != 0 && slots_[i].key != key) i = next(i);
    if (slots_[i].key == 0) ++size_;
    slots_[i] = Slot{key, value};
  }

  Value* find(const void* address) {
    const std::uintptr_t key = reinterpret_cast<std::uintptr_t>(address);
    for (std::size_t i = home(key); slots_[i].key != 0; i = next(i)) {
      if (slots_[i].key == key) return &slots_[i].value;
    }
    return nullptr;
  }

  // Removes the entry for `address`, moving it into *out. Returns false if there is none.
  bool take(const void* address, Value* out) {
    const std::uintptr_t key = reinterpret_cast<std::uintptr_t>(address);
    std::size_t i = home(key);
    for (; slots_[i].key != key; i = next(i)) {
      if (slots_[i].key == 0) return false;
    }
    *out = slots_[i].value;
    // Backward shift: pull later entries of the probe run into the hole when their home allows.
    for (std::size_t j = next(i);; j = next(j)) {
      if (slots_[j].key == 0) break;
      const std::size_t h = home(slots_[j].key);
      const bool hole_between_home_and_j = ((j - h) & mask()) >= ((j - i) & mask());
      if (hole_between_home_and_j) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i].key = 0;
    --size_;
    return true;
  }

  template <class Visit>
  void for_each(Visit&& visit) const {
    for (const Slot& slot : slots_) {
      if (slot.key != 0) visit(reinterpret_cast<const void*>(slot.key), slot.value);
    }
  }

 private:
  struct Slot {
    std::uintptr_t key = 0;
    Value value{};
  };
  static std::size_t round_up(std::size_t n) {
    std::size_t capacity = 16;
    while (capacity < n) capacity *= 2;
    return capacity;
  }
  std::size_t mask() const { return slots_.size() - 1; }
  std::size_t next(std::size_t i) const { return (i + 1) & mask(); }
  // Block addresses share their low bits (alignment); multiply to spread the high ones.
  std::size_t home(std::uintptr_t key) const {
    return static_cast<std::size_t>((key * 0x9e3779b97f4a7c15ull) >> 32) & mask();
  }
  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    size_ = 0;
    for (const Slot& slot : old) {
      if (slot.key != 0) insert(reinterpret_cast<const void*>(slot.key), slot.value);
    }
  }

  std::vector<Slot> slots_;
  std::size_t size_ = 0;
};

}  // namespace tleak::detail
