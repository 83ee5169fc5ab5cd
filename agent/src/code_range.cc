#include "code_range.h"

#include <link.h>

#include <algorithm>
#include <cstring>

namespace tleak::agent {
namespace {

struct Search {
  std::uintptr_t address;
  CodeRange found;
};

int search_object(dl_phdr_info* info, size_t, void* data) {
  auto* search = static_cast<Search*>(data);
  std::uintptr_t low = ~std::uintptr_t{0}, high = 0;
  bool holds = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || (ph.p_flags & PF_X) == 0) continue;
    const std::uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    low = std::min(low, start);
    high = std::max(high, start + ph.p_memsz);
    holds = holds || (search->address >= start && search->address < start + ph.p_memsz);
  }
  if (!holds) return 0;
  const char* slash = info->dlpi_name != nullptr ? std::strrchr(info->dlpi_name, '/') : nullptr;
  const char* name = slash != nullptr ? slash + 1 : info->dlpi_name;
  search->found = {low, high, name != nullptr && std::strncmp(name, "libc.so", 7) == 0};
  return 1;
}

}  // namespace

bool object_holds(const dl_phdr_info* info, std::uintptr_t address) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const std::uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && address >= start && address < start + ph.p_memsz) return true;
  }
  return false;
}

CodeRange code_range_of(const void* address) {
  Search search{reinterpret_cast<std::uintptr_t>(address), {}};
  if (address != nullptr) dl_iterate_phdr(search_object, &search);
  return search.found;
}

}  // namespace tleak::agent
