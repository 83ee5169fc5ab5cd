// A caching host allocator in the manner of a BFC or caching tensor allocator: it reserves large
// chunks from the OS with mmap, carves blocks out of them best-fit, coalesces freed neighbours and
// keeps freed memory for reuse, so bytes reserved exceed bytes in use until release_cached().
//
// Valgrind sees none of this by itself: to memcheck a chunk is one mmap'd range. With annotations
// on, each block handed out is registered as a mempool block (so an unreferenced block is
// "definitely lost" at the stack that allocated it) and each freed block is made no-access (so a
// read after free is an "Invalid read").
#pragma once

#include <cstddef>
#include <string>

#include "tleak/allocator.h"
#include "tleak/detail/best_fit_heap.h"
#include "tleak/detail/spin_lock.h"

namespace tleak {

struct PoolOptions {
  std::string name = "pool";
  // Chunks are reserved in multiples of this; a larger request gets a chunk rounded up to it.
  std::size_t chunk_size = std::size_t{2} << 20;
  // Register blocks with memcheck. Off shows what memcheck misses inside a pool.
  bool valgrind_annotations = true;
  // The most the pool may reserve; a request that would pass it fails with kOutOfMemory instead of
  // leaving the kernel to kill the process later. 0: half of this machine's physical memory.
  std::size_t max_reserved = 0;
};

class PoolAllocator final : public Allocator {
 public:
  explicit PoolAllocator(PoolOptions options = {});
  // Returns every chunk with no live block. A chunk that still holds live blocks stays mapped and
  // registered, as a leak would in a real runtime, so memcheck reports those blocks at exit.
  ~PoolAllocator() override;

  // Unmaps every chunk that holds no live block; returns the bytes given back.
  std::size_t release_cached();

  AllocatorStats stats() const override;
  std::string_view name() const override { return options_.name; }
  MemorySpace space() const override { return MemorySpace::kHost; }

 protected:
  void* do_allocate(std::size_t size, std::size_t alignment, AllocTag tag) override;
  void do_deallocate(void* ptr) override;

 private:
  void* grow_and_allocate(std::size_t size, std::size_t alignment, std::size_t* block_size);

  const PoolOptions options_;
  const std::size_t max_reserved_;
  const void* const anchor_;  // memcheck's key for this pool's mempool
  mutable detail::SpinLock lock_;
  detail::BestFitHeap heap_;
  AllocatorStats stats_;
};

}  // namespace tleak
