// Memory the process gives back whole as it exits, left to that instead of freed piece by piece:
// after a PyTorch program ended, freeing the recording of its 686,000 sites, its live blocks and
// its modules' symbol tables took tleak's report 20 to 25 ms (perf record of the time after the
// program's exit). Freed as usual under Valgrind and the sanitizers, whose leak checks would
// otherwise report it, and in a build that cannot tell whether Valgrind runs it.
#pragma once

#include <memory>

#include "tleak/detail/valgrind_annotations.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TLEAK_FREES_BEFORE_EXIT 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(leak_sanitizer)
#define TLEAK_FREES_BEFORE_EXIT 1
#endif
#endif

namespace tleak::diagnosis {

inline bool frees_before_exit() {
#if defined(TLEAK_FREES_BEFORE_EXIT) || !TLEAK_VALGRIND
  return true;
#else
  return valgrind::running_on_valgrind();
#endif
}

// Call only where nothing but the process's exit comes after the last use of `*owned`.
template <class T>
void leave_for_exit(std::unique_ptr<T>& owned) {
  if (!frees_before_exit()) (void)owned.release();
}

}  // namespace tleak::diagnosis
