// Live blocks of a program by address: the agent source's hottest structure (an insert and an
// erase per allocation). Open addressing with linear probing and backward-shift deletion, so no
// tombstones build up and no node is allocated per block, as std::unordered_map would.
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
      if (keys_[i] == address) return &values_[i];
      if (keys_[i] == 0) return nullptr;
    }
  }
  // False (and nothing changed) if the address is already there.
  bool insert(std::uint64_t address, const Value& value) {
    if ((size_ + 1) * 4 > keys_.size() * 3) grow();
    std::size_t i = slot_of(address);
    for (; keys_[i] != 0; i = (i + 1) & mask_) {
      if (keys_[i] == address) return false;
    }
    keys_[i] = address;
    values_[i] = value;
    ++size_;
    return true;
  }
  // Removes and returns through `out`; false if absent.
  bool take(std::uint64_t address, Value* out) {
    std::size_t i = slot_of(address);
    for (;; i = (i + 1) & mask_) {
      if (keys_[i] == address) break;
      if (keys_[i] == 0) return false;
    }
    *out = values_[i];
    // Backward shift: move later entries of the cluster into the hole when their home allows it.
    for (std::size_t j = (i + 1) & mask_; keys_[j] != 0; j = (j + 1) & mask_) {
      const std::size_t home = slot_of(keys_[j]);
      const bool movable = i <= j ? (home <= i || home > j) : (home <= i && home > j);
      if (!movable) continue;
      keys_[i] = keys_[j];
      values_[i] = values_[j];
      i = j;
    }
    keys_[i] = 0;
    --size_;
    return true;
  }
  // Asks the cache for the address's home slot, ahead of a find, insert or take: a program's
  // table is tens of megabytes, and each record of its stream would otherwise wait for memory.
  void prefetch(std::uint64_t address) const {
    const std::size_t i = slot_of(address);
    __builtin_prefetch(&keys_[i]);
    __builtin_prefetch(&values_[i]);
  }
  std::size_t size() const { return size_; }
  template <class F>
  void for_each(F&& f) const {
    for (std::size_t i = 0; i < keys_.size(); ++i) {
      if (keys_[i] != 0) f(keys_[i], values_[i]);
    }
  }
  void clear() {
    keys_.assign(1024, 0);
    values_.assign(1024, Value{});
    mask_ = 1023;
    size_ = 0;
  }

 private:
  std::size_t slot_of(std::uint64_t address) const {
    std::uint64_t h = address * 0x9e3779b97f4a7c15ull;
    return static_cast<std::size_t>(h >> 20) & mask_;
  }
  void grow() {
    std::vector<std::uint64_t> keys(keys_.size() * 2, 0);
    std::vector<Value> values(keys_.size() * 2);
    keys.swap(keys_);
    values.swap(values_);
    mask_ = keys_.size() - 1;
    size_ = 0;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (keys[i] != 0) insert(keys[i], values[i]);
    }
  }

  std::vector<std::uint64_t> keys_;
  std::vector<Value> values_;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
};

}  // namespace tleak::diagnosis
