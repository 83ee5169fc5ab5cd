// Interned keys: the same words always get the same id, a dense small integer that the stream's
// records carry instead of the words. The agent interns its Python frames here (code, instruction
// and the code's file and name objects); stacks it only hashes (key()), and the parent tells them
// apart (agent::SiteRecord). A key is a hash of the words, 96 bits of which the table keeps (two
// that differ collide with probability about n^2 / 2^97: for a million, 10^-17), and no words. The
// slots start small (32,768: the PyTorch loop's 7,500 Python frames fit) and double when three
// quarters full, in pages of their own (never malloc).
// Threads look ids up first in their own cache (ThreadBuffer); this table is only consulted,
// under its lock, on a miss.
#pragma once

#include <cstdint>

#include "tleak/agent/protocol.h"
#include "tleak/detail/spin_lock.h"

namespace tleak::agent {

struct StackKey {
  std::uint64_t a = 0;  // never 0 for a real key, so a zeroed slot or cache entry is empty
  std::uint64_t b = 0;
  bool operator==(const StackKey&) const = default;
};

class SiteTable {
 public:
  static constexpr std::uint32_t kMaxSites = agent::kMaxSites;
  // Where stacks go once the table is full (or cannot grow): one site with no frames.
  static constexpr std::uint32_t kOverflowSite = 0;

  bool init();

  static StackKey key(const std::uint64_t* words, std::uint32_t count);

  // The key's site; `*is_new` is set when this call created it (the caller then sends it).
  std::uint32_t intern(const StackKey& key, bool* is_new);

 private:
  struct Slot {
    std::uint64_t a;
    std::uint32_t b;     // the low half of StackKey::b
    std::uint32_t site;  // 0: empty (site 0 is the overflow site, never stored)
  };
  static constexpr std::uint64_t kFirstSlots = std::uint64_t{1} << 15;
  static constexpr std::uint64_t kMaxSlots = std::uint64_t{kMaxSites} * 2;

  Slot* find(Slot* slots, std::uint64_t capacity, const StackKey& key) const;
  bool grow();

  detail::SpinLock lock_;  // slots_ and capacity_ are read and changed under it
  Slot* slots_ = nullptr;
  std::uint64_t capacity_ = 0;
  std::uint32_t next_site_ = 1;
};

}  // namespace tleak::agent
