// The heaps glibc's malloc makes for threads other than the main one (its "arenas"): mappings of
// chunks, in use and free, whose free chunks still hold whatever the program last kept in them.
// The exit scan reads them only where a live block lies (when reached), never as roots: read whole,
// a heap left with no live block (its threads gone, every block freed) kept leaked blocks
// "reachable" through the stale pointers of freed vectors and nodes (a DataLoader's storages: 96
// leaked in some runs, 32 in others, as its feeder threads' heaps emptied or not).
//
// A heap begins at a multiple of its maximum size (64 MiB on 64-bit) with its header, heap_info:
// the arena it belongs to, the heap before it in that arena, its size and how much of it is
// writable. The first heap of an arena holds the arena right after the header (32 bytes before
// glibc 2.35, 48 since); a later one points back to it and to the heap before, itself aligned.
// A mapping the kernel joined to the one before it holds a heap at some aligned place inside.
#pragma once

#include <cstdint>

namespace tleak::agent {

inline constexpr std::uint64_t kGlibcHeapAlignment = std::uint64_t{64} << 20;

// The writable bytes of the glibc heap beginning at `at`, in a readable mapping that ends at `end`;
// 0 if no heap begins there.
inline std::uint64_t glibc_heap_at(std::uintptr_t at, std::uintptr_t end) {
  if (at % kGlibcHeapAlignment != 0 || end - at < 4096) return 0;
  const auto* header = reinterpret_cast<const std::uint64_t*>(at);
  const std::uint64_t arena = header[0], before = header[1], size = header[2], writable = header[3];
  if (size == 0 || size > writable || writable > end - at || writable > kGlibcHeapAlignment || writable % 4096 != 0) {
    return 0;
  }
  const auto arena_after_header = [](std::uint64_t arena_at, std::uint64_t heap) {
    return arena_at % 16 == 0 && arena_at - heap >= 32 && arena_at - heap <= 64;
  };
  const bool first = before == 0 && arena_after_header(arena, at);
  const bool later = before != 0 && before != at && before % kGlibcHeapAlignment == 0 &&
                     arena_after_header(arena, arena / kGlibcHeapAlignment * kGlibcHeapAlignment);
  return first || later ? writable : 0;
}

}  // namespace tleak::agent
