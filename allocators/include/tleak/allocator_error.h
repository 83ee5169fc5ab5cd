// Errors raised by allocators for calls that would otherwise corrupt memory silently.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace tleak {

enum class AllocatorErrorKind {
  kInvalidSize,       // zero, or larger than the allocator will ever hand out
  kInvalidAlignment,  // not a power of two, or larger than supported
  kDoubleFree,        // the block was already freed
  kUnknownPointer,    // never handed out by this allocator
  kOutOfMemory,       // the backing store cannot satisfy the request
};

const char* to_string(AllocatorErrorKind kind);

class AllocatorError : public std::runtime_error {
 public:
  AllocatorError(AllocatorErrorKind kind, const std::string& message)
      : std::runtime_error(message), kind_(kind) {}
  AllocatorErrorKind kind() const { return kind_; }

 private:
  AllocatorErrorKind kind_;
};

// Raised when an arena of fixed capacity (the simulated device) cannot satisfy a request.
// Carries the figures a user needs to decide what to shrink.
class OutOfMemoryError : public AllocatorError {
 public:
  OutOfMemoryError(const std::string& allocator, std::size_t requested, std::size_t in_use,
                   std::size_t capacity, std::size_t largest_free);
  std::size_t requested() const { return requested_; }
  std::size_t in_use() const { return in_use_; }
  std::size_t capacity() const { return capacity_; }
  std::size_t available() const { return capacity_ - in_use_; }
  std::size_t largest_free() const { return largest_free_; }

 private:
  std::size_t requested_, in_use_, capacity_, largest_free_;
};

// "1.5 MiB", "512 B": for messages and text reports.
std::string format_bytes(double bytes);

}  // namespace tleak
