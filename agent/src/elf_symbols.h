// A function's definition found by reading the loaded objects' own symbol tables, the way the
// dynamic loader does, without calling it: dlsym() and dlopen() reset the calling thread's dlerror()
// state, and a program whose error is pending when the agent first looks something up would find
// it gone (a failed dlopen, then the first operator new, then dlerror(): "(none)" under tleak).
#pragma once

#include <link.h>

#include <cstddef>
#include <cstdint>

namespace tleak::agent {

// What the loader left of one object's dynamic section, at run-time addresses.
struct DynamicSection {
  const ElfW(Sym)* symbols = nullptr;
  const char* strings = nullptr;
  const std::uint32_t* gnu_hash = nullptr;
  const std::uint32_t* sysv_hash = nullptr;
  const ElfW(Half)* versions = nullptr;
  const ElfW(Rela)* relocations = nullptr;  // DT_RELA
  std::size_t relocation_bytes = 0;
  const ElfW(Rela)* plt_relocations = nullptr;  // DT_JMPREL (null unless DT_PLTREL says RELA)
  std::size_t plt_relocation_bytes = 0;
  bool has_rpath = false, has_runpath = false;
};

// The dynamic section of a loaded object (dl_iterate_phdr's `info`); false if it has none.
bool read_dynamic_section(const dl_phdr_info* info, DynamicSection* out);

// The first definition of the function `name` (global or weak, its default version) in the
// objects loaded after the one holding `self`, in load order, which at start-up is the order of
// the global scope that dlsym(RTLD_NEXT) searches, and later also reaches objects loaded with
// RTLD_LOCAL. nullptr if none defines it (or it is an indirect function, which only the loader
// may resolve). Takes the loader's lock for listing the objects; allocates nothing.
void* find_function_after(const void* self, const char* name);
// The first definition of `name` in load order, the executable's first: the one the global scope
// binds a call to. nullptr as above.
void* find_function_first(const char* name);
// The definition of `name` in the object loaded at `base` whose dynamic section is `dynamic`
// (nullptr if it has none, or no symbol hash table): a hash lookup, quick to say no, without the
// loader's lock.
void* function_defined_in(const DynamicSection& dynamic, std::uintptr_t base, const char* name);

}  // namespace tleak::agent
