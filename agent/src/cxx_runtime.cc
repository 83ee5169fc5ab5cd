#include "cxx_runtime.h"

#include <dlfcn.h>
#include <errno.h>

#include <atomic>

#include "allocator_regions.h"
#include "modules.h"

namespace tleak::agent {

void* find_next_cxx_function(void* volatile* slot, const char* name) {
  const int saved_errno = errno;
  void* found = dlsym(RTLD_NEXT, name);
  for (const char* runtime : {"libstdc++.so.6", "libc++abi.so.1", "libc++.so.1"}) {
    if (found != nullptr) break;
    void* handle = dlopen(runtime, RTLD_LAZY | RTLD_NOLOAD);
    if (handle == nullptr) continue;
    found = dlsym(handle, name);
    real_dlclose(handle);  // NOLOAD counted one more use; the agent's dlclose would send modules
  }
  errno = saved_errno;
  __atomic_store_n(slot, found, __ATOMIC_RELEASE);
  return found;
}

bool recorded_at_operator_new(const void* function) { return allocator_code_holds(function); }

}  // namespace tleak::agent
