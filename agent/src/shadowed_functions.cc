#include "shadowed_functions.h"

#include <dlfcn.h>

#include "tleak/agent/protocol.h"

namespace tleak::agent {

std::uint32_t shadowed_functions() {
  Dl_info own{};
  if (dladdr(reinterpret_cast<const void*>(&shadowed_functions), &own) == 0) return 0;
  std::uint32_t shadowed = 0;
  for (std::uint32_t i = 0; i < kInterposedFunctionCount; ++i) {
    // RTLD_DEFAULT: the definition every call in the process binds to, the executable's first.
    const void* first = dlsym(RTLD_DEFAULT, kInterposedFunctions[i]);
    Dl_info where{};
    if (first != nullptr && dladdr(first, &where) != 0 && where.dli_fbase != own.dli_fbase) shadowed |= 1u << i;
  }
  return shadowed;
}

}  // namespace tleak::agent
