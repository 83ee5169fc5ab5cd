// Memory for the agent's own tables, straight from mmap: nothing the agent keeps may come from the
// malloc it interposes, and the exit scan must know these regions so that the addresses the
// agent stores (site frames, the live list) are never taken for the program's pointers.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tleak::agent {

// Zeroed pages, or nullptr. `reserve_only` maps without committing swap (MAP_NORESERVE), for
// tables sized for the worst case and touched a page at a time.
void* map_pages(std::size_t bytes, bool reserve_only = false);
void unmap_pages(void* address, std::size_t bytes);

// The most regions the agent keeps track of (one per thread buffer, a few tables): what it maps
// beyond them is never excluded from an exit scan, so they are many.
inline constexpr int kMaxOwnRegions = 8192;

struct OwnRegion {
  std::uintptr_t start;
  std::uintptr_t end;
};

// Registers memory the agent owns that map_pages() did not hand out (its own data and bss).
void add_own_region(std::uintptr_t start, std::uintptr_t end);
// Registers this object's own writable segments (its data and bss hold copies of block addresses:
// the buffers a scan reads through, the live list as received).
void add_own_image();
// Copies up to `max` of the agent's regions, sorted by address; returns how many.
int own_regions(OwnRegion* out, int max);

}  // namespace tleak::agent
