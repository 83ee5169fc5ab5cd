// The next definition of a function after this object, dlsym(RTLD_NEXT): the one the program would
// have called without tleak (the C library's, or another preloaded library's). Found on first use
// and kept; threads that race only find the same answer twice. errno is left as it was.
#pragma once

#include <dlfcn.h>
#include <errno.h>

#include <atomic>

namespace tleak::agent {

template <class F>
F next_symbol(std::atomic<F>& slot, const char* name) {
  F found = slot.load(std::memory_order_acquire);
  if (found == nullptr) {
    const int saved_errno = errno;
    found = reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
    errno = saved_errno;
    slot.store(found, std::memory_order_release);
  }
  return found;
}

}  // namespace tleak::agent
