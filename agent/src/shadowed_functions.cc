#include "shadowed_functions.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include "tleak/agent/protocol.h"

namespace tleak::agent {

std::uint32_t shadowed_functions() {
  Dl_info own{};
  if (dladdr(reinterpret_cast<const void*>(&shadowed_functions), &own) == 0) return 0;
  std::uint32_t shadowed = 0;
  for (std::uint32_t i = 0; i < kInterposedFunctionCount; ++i) {
    // RTLD_DEFAULT: the definition every call in the process binds to, the executable's first. But
    // an executable built without -pie that takes the function's address (python3.11 takes malloc's
    // and free's) has an undefined symbol for it whose value is its own PLT entry, the address the
    // whole process then uses for the function, and that is found first too: only a symbol with a
    // section is the executable's own definition.
    const void* first = dlsym(RTLD_DEFAULT, kInterposedFunctions[i]);
    Dl_info where{};
    void* entry = nullptr;  // the symbol's ElfW(Sym)
    if (first == nullptr || dladdr1(first, &where, &entry, RTLD_DL_SYMENT) == 0 || entry == nullptr) continue;
    const bool defined = static_cast<const ElfW(Sym)*>(entry)->st_shndx != SHN_UNDEF;
    if (where.dli_fbase != own.dli_fbase && defined) shadowed |= 1u << i;
  }
  return shadowed;
}

}  // namespace tleak::agent
