#include "agent_memory.h"

#include <link.h>
#include <sys/mman.h>

#include <algorithm>

#include "code_range.h"
#include "tleak/detail/spin_lock.h"

namespace tleak::agent {
namespace {

struct Region {
  std::uintptr_t start;
  std::uintptr_t end;
};

// Few and long-lived (thread buffers, tables): a fixed array is enough.
constexpr int kMaxRegions = kMaxOwnRegions;
Region g_regions[kMaxRegions];
int g_region_count = 0;
detail::SpinLock g_regions_lock;

std::size_t round_to_pages(std::size_t bytes) { return (bytes + 4095) & ~std::size_t{4095}; }

}  // namespace

void* map_pages(std::size_t bytes, bool reserve_only) {
  bytes = round_to_pages(bytes);
  const int flags = MAP_PRIVATE | MAP_ANONYMOUS | (reserve_only ? MAP_NORESERVE : 0);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  g_regions_lock.lock();
  if (g_region_count < kMaxRegions) {
    const auto start = reinterpret_cast<std::uintptr_t>(p);
    g_regions[g_region_count++] = {start, start + bytes};
  }
  g_regions_lock.unlock();
  return p;
}

void unmap_pages(void* address, std::size_t bytes) {
  bytes = round_to_pages(bytes);
  const auto start = reinterpret_cast<std::uintptr_t>(address);
  g_regions_lock.lock();
  for (int i = 0; i < g_region_count; ++i) {
    if (g_regions[i].start == start) {
      g_regions[i] = g_regions[--g_region_count];
      break;
    }
  }
  g_regions_lock.unlock();
  munmap(address, bytes);
}

void add_own_region(std::uintptr_t start, std::uintptr_t end) {
  g_regions_lock.lock();
  if (g_region_count < kMaxRegions) g_regions[g_region_count++] = {start, end};
  g_regions_lock.unlock();
}

namespace {

int add_if_own(dl_phdr_info* info, size_t, void*) {
  if (!object_holds(info, reinterpret_cast<std::uintptr_t>(&g_region_count))) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || (ph.p_flags & PF_W) == 0) continue;
    const std::uintptr_t start = (info->dlpi_addr + ph.p_vaddr) & ~std::uintptr_t{4095};
    const std::uintptr_t end = (info->dlpi_addr + ph.p_vaddr + ph.p_memsz + 4095) & ~std::uintptr_t{4095};
    add_own_region(start, end);
  }
  return 1;
}

}  // namespace

void add_own_image() { dl_iterate_phdr(add_if_own, nullptr); }

int own_regions(OwnRegion* out, int max) {
  g_regions_lock.lock();
  int n = 0;
  for (; n < g_region_count && n < max; ++n) out[n] = {g_regions[n].start, g_regions[n].end};
  g_regions_lock.unlock();
  // One region per thread buffer: thousands in a program with as many threads.
  std::sort(out, out + n, [](const OwnRegion& a, const OwnRegion& b) { return a.start < b.start; });
  return n;
}

}  // namespace tleak::agent
