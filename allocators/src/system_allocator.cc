#include "tleak/system_allocator.h"

#include <cstdio>
#include <cstdlib>

#include "tleak/allocator_error.h"

namespace tleak {

void* SystemAllocator::do_allocate(std::size_t size, std::size_t alignment, AllocTag) {
  void* ptr = nullptr;
  if (posix_memalign(&ptr, std::max(alignment, sizeof(void*)), size) != 0) {
    throw AllocatorError(AllocatorErrorKind::kOutOfMemory,
                         "system: the C heap cannot supply " + format_bytes(static_cast<double>(size)));
  }
  std::lock_guard lock(mutex_);
  live_.insert_or_assign(ptr, size);
  const auto bytes = static_cast<std::int64_t>(size);
  stats_.bytes_in_use.add(bytes);
  stats_.bytes_reserved.add(bytes);
  stats_.blocks_in_use.add(1);
  ++stats_.allocate_calls;
  return ptr;
}

void SystemAllocator::do_deallocate(void* ptr) {
  {
    std::lock_guard lock(mutex_);
    const auto it = live_.find(ptr);
    if (it == live_.end() || it->second == 0) {
      char text[32];
      std::snprintf(text, sizeof text, "%p", ptr);
      if (it == live_.end()) {
        throw AllocatorError(AllocatorErrorKind::kUnknownPointer,
                             std::string("system: free of ") + text +
                                 ", which this allocator never handed out");
      }
      throw AllocatorError(AllocatorErrorKind::kDoubleFree, std::string("system: double free of ") +
                                                                text + " (the block was already freed)");
    }
    const auto bytes = static_cast<std::int64_t>(it->second);
    it->second = 0;  // remembered as freed until the heap hands the address out again
    stats_.bytes_in_use.add(-bytes);
    stats_.bytes_reserved.add(-bytes);
    stats_.blocks_in_use.add(-1);
    ++stats_.deallocate_calls;
  }
  std::free(ptr);
}

AllocatorStats SystemAllocator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace tleak
