#include "elf_symbols.h"

#include <elf.h>
#include <link.h>

#include <cstdint>
#include <cstring>

#include "code_range.h"
#include "unwinder_objects.h"

namespace tleak::agent {
namespace {

// The loader rewrites most objects' dynamic entries to run-time addresses, but not every one (its
// own, the vDSO's): an address below the object's base is still relative to it.
template <class T>
const T* at(ElfW(Addr) base, ElfW(Addr) value) {
  return reinterpret_cast<const T*>(value < base ? value + base : value);
}

// Symbol `index` if it is a defined function called `name` that a lookup by name may bind to.
bool binds(const DynamicSection& table, std::uint32_t index, const char* name) {
  const ElfW(Sym)& s = table.symbols[index];
  const unsigned type = ELF64_ST_TYPE(s.st_info), binding = ELF64_ST_BIND(s.st_info);
  if (s.st_shndx == SHN_UNDEF || s.st_value == 0 || type != STT_FUNC) return false;
  if (binding != STB_GLOBAL && binding != STB_WEAK) return false;
  // A version other than the default (name@VERSION, not name@@VERSION) is hidden from lookups.
  if (table.versions != nullptr && (table.versions[index] & 0x8000) != 0) return false;
  return std::strcmp(table.strings + s.st_name, name) == 0;
}

const ElfW(Sym)* find_gnu(const DynamicSection& table, const char* name) {
  std::uint32_t h = 5381;
  for (const char* c = name; *c != '\0'; ++c) h = h * 33 + static_cast<unsigned char>(*c);
  const std::uint32_t* header = table.gnu_hash;
  const std::uint32_t buckets = header[0], first_symbol = header[1], bloom_words = header[2], shift = header[3];
  if (buckets == 0 || bloom_words == 0) return nullptr;
  const auto* bloom = reinterpret_cast<const ElfW(Addr)*>(header + 4);
  constexpr std::uint32_t kBits = sizeof(ElfW(Addr)) * 8;
  const ElfW(Addr) word = bloom[(h / kBits) & (bloom_words - 1)];
  if (((word >> (h % kBits)) & (word >> ((h >> shift) % kBits)) & 1) == 0) return nullptr;
  const auto* bucket = reinterpret_cast<const std::uint32_t*>(bloom + bloom_words);
  const std::uint32_t* chain = bucket + buckets;
  std::uint32_t index = bucket[h % buckets];
  if (index < first_symbol) return nullptr;
  for (;; ++index) {
    const std::uint32_t entry = chain[index - first_symbol];
    if ((entry | 1) == (h | 1) && binds(table, index, name)) return &table.symbols[index];
    if ((entry & 1) != 0) return nullptr;
  }
}

const ElfW(Sym)* find_sysv(const DynamicSection& table, const char* name) {
  std::uint32_t h = 0;
  for (const char* c = name; *c != '\0'; ++c) {
    h = (h << 4) + static_cast<unsigned char>(*c);
    const std::uint32_t high = h & 0xf0000000u;
    if (high != 0) h ^= high >> 24;
    h &= ~high;
  }
  const std::uint32_t buckets = table.sysv_hash[0], chains = table.sysv_hash[1];
  if (buckets == 0) return nullptr;
  const std::uint32_t* bucket = table.sysv_hash + 2;
  const std::uint32_t* chain = bucket + buckets;
  for (std::uint32_t index = bucket[h % buckets]; index != STN_UNDEF && index < chains; index = chain[index]) {
    if (binds(table, index, name)) return &table.symbols[index];
  }
  return nullptr;
}

// Where to look: the objects after the one holding `self`, or all.
enum class Where { kAfter, kAll };

struct Search {
  const void* self;
  const char* name;
  Where where;
  bool past_self = false;
  void* found = nullptr;
};

int visit(dl_phdr_info* info, std::size_t, void* data) {
  auto* search = static_cast<Search*>(data);
  if (search->where == Where::kAfter && !search->past_self) {
    search->past_self = object_holds(info, reinterpret_cast<std::uintptr_t>(search->self));
    return 0;
  }
  DynamicSection dynamic;
  search->found = read_dynamic_section(info, &dynamic) ? function_defined_in(dynamic, info->dlpi_addr, search->name)
                                                       : nullptr;
  return search->found != nullptr ? 1 : 0;  // the first one, as the loader would bind
}

void* search(const void* self, const char* name, Where where) {
  Search s{self, name, where};
  real_dl_iterate_phdr(visit, &s);
  return s.found;
}

}  // namespace

bool read_dynamic_section(const dl_phdr_info* info, DynamicSection* out) {
  const ElfW(Dyn)* dynamic = nullptr;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) {
      dynamic = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    }
  }
  if (dynamic == nullptr) return false;
  const ElfW(Addr) base = info->dlpi_addr;
  bool plt_is_rela = true;
  for (const ElfW(Dyn)* d = dynamic; d->d_tag != DT_NULL; ++d) {
    switch (d->d_tag) {
      case DT_SYMTAB: out->symbols = at<ElfW(Sym)>(base, d->d_un.d_ptr); break;
      case DT_STRTAB: out->strings = at<char>(base, d->d_un.d_ptr); break;
      case DT_GNU_HASH: out->gnu_hash = at<std::uint32_t>(base, d->d_un.d_ptr); break;
      case DT_HASH: out->sysv_hash = at<std::uint32_t>(base, d->d_un.d_ptr); break;
      case DT_VERSYM: out->versions = at<ElfW(Half)>(base, d->d_un.d_ptr); break;
      case DT_RELA: out->relocations = at<ElfW(Rela)>(base, d->d_un.d_ptr); break;
      case DT_RELASZ: out->relocation_bytes = d->d_un.d_val; break;
      case DT_JMPREL: out->plt_relocations = at<ElfW(Rela)>(base, d->d_un.d_ptr); break;
      case DT_PLTRELSZ: out->plt_relocation_bytes = d->d_un.d_val; break;
      case DT_PLTREL: plt_is_rela = d->d_un.d_val == DT_RELA; break;
      case DT_RPATH: out->has_rpath = true; break;
      case DT_RUNPATH: out->has_runpath = true; break;
      default: break;
    }
  }
  if (!plt_is_rela) out->plt_relocations = nullptr;
  return true;
}

void* function_defined_in(const DynamicSection& dynamic, std::uintptr_t base, const char* name) {
  if (dynamic.symbols == nullptr || dynamic.strings == nullptr) return nullptr;
  const ElfW(Sym)* symbol = dynamic.gnu_hash != nullptr    ? find_gnu(dynamic, name)
                            : dynamic.sysv_hash != nullptr ? find_sysv(dynamic, name)
                                                           : nullptr;
  return symbol != nullptr ? reinterpret_cast<void*>(base + symbol->st_value) : nullptr;
}

void* find_function_after(const void* self, const char* name) { return search(self, name, Where::kAfter); }

void* find_function_first(const char* name) { return search(nullptr, name, Where::kAll); }

}  // namespace tleak::agent
