// The aligned C heap, with the bookkeeping that lets it reject double and foreign frees.
// The baseline the pool is measured against, and what memcheck sees natively.
#pragma once

#include <mutex>
#include <unordered_map>

#include "tleak/allocator.h"

namespace tleak {

class SystemAllocator final : public Allocator {
 public:
  SystemAllocator() = default;
  // Frees nothing still live: an allocation never freed stays a leak the heap checker can see.
  ~SystemAllocator() override = default;

  AllocatorStats stats() const override;
  std::string_view name() const override { return "system"; }
  MemorySpace space() const override { return MemorySpace::kHost; }

 protected:
  void* do_allocate(std::size_t size, std::size_t alignment, AllocTag tag) override;
  void do_deallocate(void* ptr) override;

 private:
  mutable std::mutex mutex_;
  // Size of each block handed out; 0 once freed, so a second free is told from a foreign pointer.
  // Bounded by the number of distinct addresses the heap has ever returned.
  std::unordered_map<void*, std::size_t> live_;
  AllocatorStats stats_;
};

}  // namespace tleak
