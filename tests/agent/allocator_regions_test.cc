// The regions a preloaded malloc maps for itself, as the interposed mmap, munmap and mremap report
// them: kept from the malloc's code only, cut by unmaps, moved by remaps, never from shared or
// file mappings. Here this test program stands for the malloc (its own code is the malloc's).
#include "allocator_regions.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstring>
#include <vector>

namespace tleak::agent {
namespace {

void stand_in_malloc() {}

std::vector<std::pair<std::uintptr_t, std::uintptr_t>> regions() {
  OwnRegion out[kMaxAllocatorRegions];
  const int n = allocator_regions(out, kMaxAllocatorRegions);
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> v;
  for (int i = 0; i < n; ++i) v.emplace_back(out[i].start, out[i].end);
  return v;
}

const void* at(std::uintptr_t address) { return reinterpret_cast<const void*>(address); }

TEST(AllocatorRegions, KeepsWhatTheMallocMapsAsItIsCutAndMoved) {
  constexpr int kPrivate = MAP_PRIVATE | MAP_ANONYMOUS;
  const void* malloc_code = reinterpret_cast<const void*>(&stand_in_malloc);
  // The C library's own strlen (under a sanitizer, &strlen is the runtime's, in this program).
  const void* other_code = dlsym(RTLD_NEXT, "strlen");
  ASSERT_NE(other_code, nullptr);
  // Before the start (a preloaded malloc's constructor runs first), every caller is noted.
  allocator_mapped(at(0x100000), 0x3000, kPrivate, malloc_code);
  allocator_mapped(at(0x200000), 0x1000, kPrivate, other_code);
  allocator_mapped(at(0x300000), 0x1000, MAP_SHARED | MAP_ANONYMOUS, malloc_code);  // shared: not heap
  allocator_mapped(at(0x400000), 0x1000, MAP_PRIVATE, malloc_code);                 // a file's bytes
  allocator_regions_start(code_range_of(malloc_code));
  // Only the malloc's own mapping remains; a length is rounded up to whole pages.
  allocator_mapped(at(0x500000), 10, kPrivate, malloc_code);
  allocator_mapped(at(0x600000), 0x1000, kPrivate, other_code);
  using Regions = std::vector<std::pair<std::uintptr_t, std::uintptr_t>>;
  EXPECT_EQ(regions(), (Regions{{0x100000, 0x103000}, {0x500000, 0x501000}}));
  // An unmap in the middle leaves two pieces; one over the end takes what it covers.
  allocator_unmapped(at(0x101000), 0x1000);
  EXPECT_EQ(regions(), (Regions{{0x100000, 0x101000}, {0x102000, 0x103000}, {0x500000, 0x501000}}));
  allocator_unmapped(at(0x4ff000), 0x2000);
  EXPECT_EQ(regions(), (Regions{{0x100000, 0x101000}, {0x102000, 0x103000}}));
  // A remap moves a region (and grows it); a remap of memory the malloc did not map adds nothing.
  allocator_remapped(at(0x102000), 0x1000, at(0x700000), 0x2000);
  allocator_remapped(at(0x800000), 0x1000, at(0x900000), 0x1000);
  EXPECT_EQ(regions(), (Regions{{0x100000, 0x101000}, {0x700000, 0x702000}}));
  // A mapping put over others (MAP_FIXED) replaces them.
  allocator_mapped(at(0x0ff000), 0x3000, kPrivate | MAP_FIXED, malloc_code);
  EXPECT_EQ(regions(), (Regions{{0x0ff000, 0x102000}, {0x700000, 0x702000}}));
  // Stopped (a forked child): nothing more is noted, nothing is given to a scan.
  allocator_regions_stop();
  allocator_mapped(at(0xa00000), 0x1000, kPrivate, malloc_code);
  EXPECT_TRUE(regions().empty());
}

}  // namespace
}  // namespace tleak::agent
