#include "tleak/allocator.h"

#include <cstdio>
#include <string>

#include "tleak/allocator_error.h"

namespace tleak {

void validate_request(std::string_view allocator, std::size_t size, std::size_t alignment) {
  if (size == 0 || size > Allocator::kMaxAllocationSize) {
    throw AllocatorError(AllocatorErrorKind::kInvalidSize,
                         std::string(allocator) + ": cannot allocate " + std::to_string(size) +
                             " bytes (sizes must be between 1 byte and 1 TiB)");
  }
  if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > Allocator::kMaxAlignment) {
    throw AllocatorError(AllocatorErrorKind::kInvalidAlignment,
                         std::string(allocator) + ": alignment " + std::to_string(alignment) +
                             " is not a power of two between 1 and 1 MiB");
  }
}

void* Allocator::allocate(std::size_t size, std::size_t alignment, AllocTag tag) {
  // One test for the common case; naming the problem (and the allocator) is the slow path's job.
  const bool valid_size = size - 1 < kMaxAllocationSize;
  const bool valid_alignment = (alignment & (alignment - 1)) == 0 && alignment - 1 < kMaxAlignment;
  if (!(valid_size && valid_alignment)) [[unlikely]] validate_request(name(), size, alignment);
  void* ptr = do_allocate(size, alignment, tag);
  // Forbids turning the call above into a tail jump: this frame must stay on the stack so the
  // tracker can skip exactly its own frames (tracking_allocator.cc, kTrackerFrames).
  asm volatile("" : "+r"(ptr));
  return ptr;
}

void Allocator::deallocate(void* ptr) {
  if (ptr != nullptr) do_deallocate(ptr);
}

const char* to_string(AllocatorErrorKind kind) {
  switch (kind) {
    case AllocatorErrorKind::kInvalidSize: return "invalid size";
    case AllocatorErrorKind::kInvalidAlignment: return "invalid alignment";
    case AllocatorErrorKind::kDoubleFree: return "double free";
    case AllocatorErrorKind::kUnknownPointer: return "unknown pointer";
    case AllocatorErrorKind::kOutOfMemory: return "out of memory";
  }
  return "allocator error";
}

std::string format_bytes(double bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  double magnitude = bytes < 0 ? -bytes : bytes;
  while (magnitude >= 1024 && unit < 4) {
    magnitude /= 1024;
    bytes /= 1024;
    ++unit;
  }
  char text[48];
  if (unit == 0) {
    std::snprintf(text, sizeof text, "%.0f B", bytes);
  } else {
    std::snprintf(text, sizeof text, "%.1f %s", bytes, kUnits[unit]);
  }
  return text;
}

OutOfMemoryError::OutOfMemoryError(const std::string& allocator, std::size_t requested,
                                   std::size_t in_use, std::size_t capacity,
                                   std::size_t largest_free)
    : AllocatorError(AllocatorErrorKind::kOutOfMemory,
                     allocator + ": out of memory: asked for " +
                         format_bytes(static_cast<double>(requested)) + ", " +
                         format_bytes(static_cast<double>(in_use)) + " in use, " +
                         format_bytes(static_cast<double>(capacity - in_use)) + " available of " +
                         format_bytes(static_cast<double>(capacity)) + " (largest free block " +
                         format_bytes(static_cast<double>(largest_free)) + ")"),
      requested_(requested),
      in_use_(in_use),
      capacity_(capacity),
      largest_free_(largest_free) {}

}  // namespace tleak
