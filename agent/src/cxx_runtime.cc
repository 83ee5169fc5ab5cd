#include "cxx_runtime.h"

#include <dlfcn.h>
#include <errno.h>

#include <initializer_list>

#include "elf_symbols.h"
#include "modules.h"
#include "next_symbol.h"

namespace tleak::agent {

void* find_next_cxx_function(std::atomic<void*>& slot, const char* name) {
  // Read from the objects' symbol tables: no call into the loader, whose every dlsym and dlopen
  // resets the thread's dlerror() state (a program's failed dlopen, then its first operator new,
  // then its dlerror(), had found the message gone).
  void* found = find_function_after(reinterpret_cast<const void*>(&find_next_cxx_function), name);
  if (found != nullptr) {
    slot.store(found, std::memory_order_release);
    return found;
  }
  // What the symbol tables could not answer (an indirect function), the loader does.
  // Not passed through: what the loader allocates here may hold the program's own pointers from
  // then on (a dlopen that grows the loader's lists), and a block the agent did not record is
  // never read by the exit scan (passed through, a program's own dlopen list once read lost).
  // The cost: a few small sites inside the agent in a process that loads C++ locally.
  found = next_symbol(slot, name);
  if (found != nullptr) return found;
  // A failed dlsym leaves its message for dlerror() until the next call that succeeds: the one
  // below that finds the runtime (glibc), so the program's dlerror() says what it would have.
  const int saved_errno = errno;
  for (const char* runtime : {"libstdc++.so.6", "libc++abi.so.1", "libc++.so.1"}) {
    void* handle = dlopen(runtime, RTLD_LAZY | RTLD_NOLOAD);
    if (handle == nullptr) continue;
    found = dlsym(handle, name);
    real_dlclose(handle);  // NOLOAD counted one more use; the agent's dlclose would send modules
    if (found != nullptr) break;
  }
  errno = saved_errno;
  slot.store(found, std::memory_order_release);
  return found;
}

}  // namespace tleak::agent
