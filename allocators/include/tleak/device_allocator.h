// A simulated accelerator memory: one arena of fixed capacity mapped outside the C heap, carved
// best-fit like a device allocator would. Valgrind sees only an anonymous mapping, never the
// blocks in it: a leak here is invisible to memcheck, exactly as device memory is. tleak sees it
// through the tracker instead.
#pragma once

#include <cstddef>
#include <string>

#include "tleak/allocator.h"
#include "tleak/detail/best_fit_heap.h"
#include "tleak/detail/spin_lock.h"

namespace tleak {

struct DeviceOptions {
  std::string name = "device";
  std::size_t capacity = std::size_t{1} << 30;
  // TensorFlow's allow_growth: reserve the arena region by region as allocations need it (2 MiB at
  // least) instead of all of it up front. Reserved bytes then follow the peak; live bytes do not
  // change, and nothing reserved is ever given back.
  bool allow_growth = false;
};

class DeviceAllocator final : public Allocator {
 public:
  explicit DeviceAllocator(DeviceOptions options = {});
  // The arena stays mapped if blocks are still live (leaked device memory stays leaked).
  ~DeviceAllocator() override;

  std::size_t capacity() const { return options_.capacity; }
  AllocatorStats stats() const override;
  std::string_view name() const override { return options_.name; }
  MemorySpace space() const override { return MemorySpace::kDevice; }

 protected:
  // Throws OutOfMemoryError naming the request, the bytes in use and the bytes available.
  void* do_allocate(std::size_t size, std::size_t alignment, AllocTag tag) override;
  void do_deallocate(void* ptr) override;

 private:
  const DeviceOptions options_;
  void* arena_;
  std::size_t grown_ = 0;  // with allow_growth: the part of the arena handed to the heap
  mutable detail::SpinLock lock_;
  detail::BestFitHeap heap_;
  AllocatorStats stats_;
};

}  // namespace tleak
