#include "tleak/device_allocator.h"

#include <sys/mman.h>

#include <algorithm>
#include <mutex>

#include "tleak/allocator_error.h"

namespace tleak {

DeviceAllocator::DeviceAllocator(DeviceOptions options)
    : options_(std::move(options)), heap_(options_.name) {
  if (options_.capacity == 0 || options_.capacity % detail::BestFitHeap::kGranule != 0 ||
      options_.capacity > kMaxAllocationSize) {
    throw AllocatorError(AllocatorErrorKind::kInvalidSize,
                         options_.name + ": capacity must be a positive multiple of 64 bytes, at most 1 TiB");
  }
  // Reserved, not committed: pages cost memory only once a kernel writes them.
  arena_ = mmap(nullptr, options_.capacity, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (arena_ == MAP_FAILED) {
    throw AllocatorError(AllocatorErrorKind::kOutOfMemory,
                         options_.name + ": cannot reserve an arena of " +
                             format_bytes(static_cast<double>(options_.capacity)));
  }
  if (!options_.allow_growth) {
    heap_.add_region(static_cast<char*>(arena_), options_.capacity);
    grown_ = options_.capacity;
    stats_.bytes_reserved.add(static_cast<std::int64_t>(options_.capacity));
  }
}

DeviceAllocator::~DeviceAllocator() {
  if (stats_.blocks_in_use.current == 0) munmap(arena_, options_.capacity);
}

void* DeviceAllocator::do_allocate(std::size_t size, std::size_t alignment, AllocTag) {
  std::lock_guard lock(lock_);
  std::size_t block_size = 0;
  void* ptr = heap_.allocate(size, alignment, &block_size);
  while (ptr == nullptr && grown_ < options_.capacity) {
    // A new region big enough for this request (regions do not merge), in 2 MiB steps.
    constexpr std::size_t kStep = std::size_t{2} << 20;
    const std::size_t wanted = (size + alignment + kStep - 1) / kStep * kStep;
    const std::size_t region = std::min(wanted, options_.capacity - grown_);
    heap_.add_region(static_cast<char*>(arena_) + grown_, region);
    grown_ += region;
    stats_.bytes_reserved.add(static_cast<std::int64_t>(region));
    ptr = heap_.allocate(size, alignment, &block_size);
  }
  if (ptr == nullptr) {
    throw OutOfMemoryError(options_.name, size,
                           static_cast<std::size_t>(stats_.bytes_in_use.current), options_.capacity,
                           heap_.largest_free_block());
  }
  stats_.bytes_in_use.add(static_cast<std::int64_t>(block_size));
  stats_.blocks_in_use.add(1);
  ++stats_.allocate_calls;
  return ptr;
}

void DeviceAllocator::do_deallocate(void* ptr) {
  std::lock_guard lock(lock_);
  const std::size_t freed = heap_.deallocate(ptr);
  stats_.bytes_in_use.add(-static_cast<std::int64_t>(freed));
  stats_.blocks_in_use.add(-1);
  ++stats_.deallocate_calls;
}

AllocatorStats DeviceAllocator::stats() const {
  std::lock_guard lock(lock_);
  return stats_;
}

}  // namespace tleak
