// The interface every byte of the tensor runtime goes through.
//
// allocate() and deallocate() are non-virtual fronts that validate arguments once, so every
// allocator rejects bad calls the same way; implementations override do_allocate() and
// do_deallocate(). All implementations are thread-safe.
#pragma once

#include <cstddef>
#include <string_view>

#include "tleak/allocator_stats.h"

namespace tleak {

// A short static label for what an allocation is for ("tensor", "scratch"). Never owns memory,
// so recording it costs a pointer copy.
struct AllocTag {
  const char* name = "untagged";
};

// Where the bytes live: host memory the process (and Valgrind) can see, or the simulated device.
enum class MemorySpace { kHost, kDevice };

class Allocator {
 public:
  // Suits Eigen's vectorized kernels and a cache line.
  static constexpr std::size_t kDefaultAlignment = 64;
  // Largest single request any allocator accepts: bigger is a bug in the caller.
  static constexpr std::size_t kMaxAllocationSize = std::size_t{1} << 40;
  static constexpr std::size_t kMaxAlignment = std::size_t{1} << 20;

  virtual ~Allocator() = default;
  Allocator() = default;
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;

  // Throws AllocatorError (kInvalidSize, kInvalidAlignment, kOutOfMemory). Never returns null.
  void* allocate(std::size_t size, std::size_t alignment = kDefaultAlignment, AllocTag tag = {});
  // Throws AllocatorError (kDoubleFree, kUnknownPointer); deallocate(nullptr) is a no-op.
  void deallocate(void* ptr);

  virtual AllocatorStats stats() const = 0;
  virtual std::string_view name() const = 0;
  virtual MemorySpace space() const = 0;

 protected:
  virtual void* do_allocate(std::size_t size, std::size_t alignment, AllocTag tag) = 0;
  virtual void do_deallocate(void* ptr) = 0;
};

// Throws the AllocatorError that allocate() would for these arguments; no-op when they are valid.
void validate_request(std::string_view allocator, std::size_t size, std::size_t alignment);

}  // namespace tleak
