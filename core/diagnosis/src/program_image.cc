#include "program_image.h"

#include <fcntl.h>
#include <gelf.h>
#include <unistd.h>

#include <cstring>

namespace tleak::diagnosis {
namespace {

struct Runtime {
  const char* name;
  const char* library_prefixes[2];  // gcc's, clang's shared runtime
  const char* entry_point;
};

constexpr Runtime kRuntimes[] = {
    {"AddressSanitizer", {"libasan.so", "libclang_rt.asan"}, "__asan_init"},
    {"ThreadSanitizer", {"libtsan.so", "libclang_rt.tsan"}, "__tsan_init"},
    {"MemorySanitizer", {"libmsan.so", "libclang_rt.msan"}, "__msan_init"},
    {"HWAddressSanitizer", {"libhwasan.so", "libclang_rt.hwasan"}, "__hwasan_init"},
};

const char* runtime_of_library(const char* needed) {
  for (const Runtime& r : kRuntimes) {
    for (const char* prefix : r.library_prefixes) {
      if (std::strncmp(needed, prefix, std::strlen(prefix)) == 0) return r.name;
    }
  }
  return nullptr;
}

const char* runtime_of_symbol(const char* symbol) {
  for (const Runtime& r : kRuntimes) {
    if (std::strcmp(symbol, r.entry_point) == 0) return r.name;
  }
  return nullptr;
}

const char* find_runtime(Elf* elf) {
  for (Elf_Scn* section = elf_nextscn(elf, nullptr); section != nullptr; section = elf_nextscn(elf, section)) {
    GElf_Shdr header;
    if (gelf_getshdr(section, &header) == nullptr || header.sh_entsize == 0) continue;
    Elf_Data* data = elf_getdata(section, nullptr);
    if (data == nullptr) continue;
    const std::size_t count = header.sh_size / header.sh_entsize;
    if (header.sh_type == SHT_DYNAMIC) {
      for (std::size_t i = 0; i < count; ++i) {
        GElf_Dyn entry;
        if (gelf_getdyn(data, static_cast<int>(i), &entry) == nullptr || entry.d_tag != DT_NEEDED) continue;
        const char* needed = elf_strptr(elf, header.sh_link, entry.d_un.d_val);
        if (const char* name = needed != nullptr ? runtime_of_library(needed) : nullptr) return name;
      }
    } else if (header.sh_type == SHT_DYNSYM) {
      for (std::size_t i = 0; i < count; ++i) {
        GElf_Sym symbol;
        if (gelf_getsym(data, static_cast<int>(i), &symbol) == nullptr || symbol.st_shndx == SHN_UNDEF) continue;
        const char* text = elf_strptr(elf, header.sh_link, symbol.st_name);
        if (const char* name = text != nullptr ? runtime_of_symbol(text) : nullptr) return name;
      }
    }
  }
  return nullptr;
}

// Whether the loader would run the program as it is, without loading anything first.
bool is_static(Elf* elf) {
  std::size_t count = 0;
  if (elf_getphdrnum(elf, &count) != 0 || count == 0) return false;
  for (std::size_t i = 0; i < count; ++i) {
    GElf_Phdr header;
    if (gelf_getphdr(elf, static_cast<int>(i), &header) == nullptr) return false;
    if (header.p_type == PT_INTERP || header.p_type == PT_DYNAMIC) return false;
  }
  return true;
}

}  // namespace

ProgramImage inspect_program(const std::string& path) {
  ProgramImage image;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return image;
  char first[2] = {};
  image.is_script = pread(fd, first, sizeof first, 0) == 2 && first[0] == '#' && first[1] == '!';
  if (!image.is_script && elf_version(EV_CURRENT) != EV_NONE) {
    if (Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr)) {
      if (elf_kind(elf) == ELF_K_ELF) {
        image.is_static = is_static(elf);
        if (const char* name = find_runtime(elf)) image.sanitizer = name;
      }
      elf_end(elf);
    }
  }
  close(fd);
  return image;
}

}  // namespace tleak::diagnosis
