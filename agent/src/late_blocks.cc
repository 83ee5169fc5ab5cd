#include "late_blocks.h"

#include <atomic>

#include "agent_memory.h"
#include "tleak/detail/spin_lock.h"

namespace tleak::agent {
namespace {

struct Entry {
  std::atomic<std::uint64_t> address;
  std::atomic<std::uint64_t> size;
};

// 65,536 entries (1 MiB, committed as touched). A freed entry is taken again by the next block
// whose probe meets it; a block that finds no entry within kMaxProbes is not noted (and not
// scanned).
constexpr int kEntryBits = 16;
constexpr std::uint64_t kEntries = std::uint64_t{1} << kEntryBits;
constexpr int kMaxProbes = 64;
constexpr std::uint64_t kFreed = 1;  // a size no block has: the set keeps 0 for an empty entry

std::atomic<Entry*> g_entries{nullptr};
detail::SpinLock g_lock;

std::uint64_t first_slot(std::uint64_t address) {
  return (address * 0x9E3779B97F4A7C15ull) >> (64 - kEntryBits);
}

}  // namespace

bool late_blocks_begin() {
  if (g_entries.load(std::memory_order_acquire) != nullptr) return true;
  auto* entries = static_cast<Entry*>(map_pages(kEntries * sizeof(Entry), /*reserve_only=*/true));
  g_entries.store(entries, std::memory_order_release);
  return entries != nullptr;
}

void late_block_allocated(std::uint64_t address, std::uint64_t size) {
  Entry* entries = g_entries.load(std::memory_order_acquire);
  if (entries == nullptr || address == 0) return;
  if (size <= kFreed) size = kFreed + 1;  // a 0- or 1-byte block is still a block
  g_lock.lock();
  std::uint64_t i = first_slot(address);
  for (int probe = 0; probe < kMaxProbes; ++probe, i = (i + 1) & (kEntries - 1)) {
    const std::uint64_t at = entries[i].address.load(std::memory_order_relaxed);
    const bool free_entry =
        at == 0 || at == address || entries[i].size.load(std::memory_order_relaxed) == kFreed;
    if (!free_entry) continue;
    entries[i].size.store(size, std::memory_order_release);
    entries[i].address.store(address, std::memory_order_release);
    break;
  }
  g_lock.unlock();
}

void late_block_freed(std::uint64_t address) {
  Entry* entries = g_entries.load(std::memory_order_acquire);
  if (entries == nullptr || address == 0) return;
  g_lock.lock();
  std::uint64_t i = first_slot(address);
  for (int probe = 0; probe < kMaxProbes; ++probe, i = (i + 1) & (kEntries - 1)) {
    const std::uint64_t at = entries[i].address.load(std::memory_order_relaxed);
    if (at == 0) break;
    if (at == address) {
      entries[i].size.store(kFreed, std::memory_order_release);
      break;
    }
  }
  g_lock.unlock();
}

std::uint64_t late_blocks(LiveBlock* out, std::uint64_t max) {
  Entry* entries = g_entries.load(std::memory_order_acquire);
  if (entries == nullptr) return 0;
  std::uint64_t n = 0;
  for (std::uint64_t i = 0; i < kEntries && n < max; ++i) {
    const std::uint64_t address = entries[i].address.load(std::memory_order_acquire);
    if (address == 0) continue;
    const std::uint64_t size = entries[i].size.load(std::memory_order_acquire);
    if (size <= kFreed) continue;
    out[n++] = {address, size};
  }
  return n;
}

}  // namespace tleak::agent
