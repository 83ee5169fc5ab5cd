#include "tleak/pool_allocator.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>

#include "tleak/allocator_error.h"
#include "tleak/detail/valgrind_annotations.h"

namespace tleak {
namespace {

// memcheck keys a mempool by an anchor address. A pool destroyed with live blocks keeps its
// mempool registered (the leak must stay visible), so `this` could later be reused as the key of a
// new pool; a never-reused key avoids that. The keys are never dereferenced.
std::size_t half_of_physical_memory() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page) / 2 : std::size_t{1} << 32;
}

const void* unique_pool_anchor() {
  static std::atomic<std::uintptr_t> next{0x7a00};
  return reinterpret_cast<const void*>(next.fetch_add(64));
}

}  // namespace

PoolAllocator::PoolAllocator(PoolOptions options)
    : options_(std::move(options)),
      max_reserved_(options_.max_reserved != 0 ? options_.max_reserved : half_of_physical_memory()),
      anchor_(unique_pool_anchor()),
      heap_(options_.name) {
  if (options_.chunk_size == 0 || options_.chunk_size % 4096 != 0) {
    throw AllocatorError(AllocatorErrorKind::kInvalidSize,
                         options_.name + ": chunk size must be a positive multiple of 4 KiB");
  }
  if (options_.valgrind_annotations) valgrind::create_pool(anchor_);
}

PoolAllocator::~PoolAllocator() {
  for (const auto& chunk : heap_.take_empty_regions()) munmap(chunk.base, chunk.size);
  // Live blocks remain: keep their chunks and the mempool so memcheck still sees them as lost.
  if (options_.valgrind_annotations && heap_.region_count() == 0) valgrind::destroy_pool(anchor_);
}

void* PoolAllocator::do_allocate(std::size_t size, std::size_t alignment, AllocTag) {
  std::size_t block_size = 0;
  void* ptr;
  {
    std::lock_guard lock(lock_);
    ptr = heap_.allocate(size, alignment, &block_size);
    if (ptr == nullptr) [[unlikely]] ptr = grow_and_allocate(size, alignment, &block_size);
    stats_.bytes_in_use.add(static_cast<std::int64_t>(block_size));
    stats_.blocks_in_use.add(1);
    ++stats_.allocate_calls;
    // Annotate under the lock: another thread may reuse the block the moment it is released.
    if (options_.valgrind_annotations) valgrind::pool_alloc(anchor_, ptr, size);
  }
  return ptr;
}

void* PoolAllocator::grow_and_allocate(std::size_t size, std::size_t alignment,
                                       std::size_t* block_size) {
  // Room for the block plus the worst-case padding to reach an alignment above the granule.
  const std::size_t slack =
      alignment > detail::BestFitHeap::kGranule ? alignment - detail::BestFitHeap::kGranule : 0;
  const std::size_t want = detail::BestFitHeap::round_up(size) + slack;
  const std::size_t chunk = (want + options_.chunk_size - 1) / options_.chunk_size * options_.chunk_size;
  const auto reserved = static_cast<std::size_t>(stats_.bytes_reserved.current);
  if (chunk > max_reserved_ - std::min(reserved, max_reserved_)) {
    throw AllocatorError(AllocatorErrorKind::kOutOfMemory,
                         options_.name + ": out of memory: asked for " + format_bytes(static_cast<double>(size)) + ", " +
                             format_bytes(static_cast<double>(reserved)) + " reserved of a limit of " +
                             format_bytes(static_cast<double>(max_reserved_)));
  }
  void* base = mmap(nullptr, chunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) {
    throw AllocatorError(AllocatorErrorKind::kOutOfMemory,
                         options_.name + ": the OS refused a chunk of " +
                             format_bytes(static_cast<double>(chunk)) + " for a request of " +
                             format_bytes(static_cast<double>(size)));
  }
  // Nothing in a fresh chunk is a block yet: reading it is an error memcheck should report.
  if (options_.valgrind_annotations) valgrind::make_noaccess(base, chunk);
  heap_.add_region(static_cast<char*>(base), chunk);
  stats_.bytes_reserved.add(static_cast<std::int64_t>(chunk));
  return heap_.allocate(size, alignment, block_size);
}

void PoolAllocator::do_deallocate(void* ptr) {
  {
    std::lock_guard lock(lock_);
    const std::size_t freed = heap_.deallocate(ptr);  // throws before anything changes
    stats_.bytes_in_use.add(-static_cast<std::int64_t>(freed));
    stats_.blocks_in_use.add(-1);
    ++stats_.deallocate_calls;
    if (options_.valgrind_annotations) valgrind::pool_free(anchor_, ptr);
  }
}

std::size_t PoolAllocator::release_cached() {
  std::size_t released = 0;
  std::lock_guard lock(lock_);
  for (const auto& chunk : heap_.take_empty_regions()) {
    munmap(chunk.base, chunk.size);
    released += chunk.size;
  }
  stats_.bytes_reserved.add(-static_cast<std::int64_t>(released));
  return released;
}

AllocatorStats PoolAllocator::stats() const {
  std::lock_guard lock(lock_);
  return stats_;
}

}  // namespace tleak
