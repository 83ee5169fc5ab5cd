#include "unwinder_signals.h"

#include <dlfcn.h>
#include <errno.h>
// Local unwinding only: the names libunwind.so itself exports.
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <pthread.h>

#include <cstdint>

#include "code_range.h"

namespace tleak::agent {
namespace {

using SigprocmaskFn = int (*)(int, const sigset_t*, sigset_t*);

SigprocmaskFn g_next_sigprocmask = nullptr;
// libunwind's code; empty until found.
CodeRange g_unwinder;

// In every process the agent is loaded into, tracked or not: the program's calls go where they
// would have gone without tleak (another preloaded library's sigprocmask, or the C library's).
__attribute__((constructor)) void find_next_sigprocmask() {
  const int saved_errno = errno;
  g_next_sigprocmask = reinterpret_cast<SigprocmaskFn>(dlsym(RTLD_NEXT, "sigprocmask"));
  errno = saved_errno;
}

}  // namespace

void unwinder_signals_init() {
  // The per-thread caches need no lock, which libunwind would take with every signal blocked.
  unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
  g_unwinder = code_range_of(reinterpret_cast<const void*>(&unw_backtrace));
}

bool is_unwinder_code(const void* caller) { return g_unwinder.holds(caller); }

int real_sigprocmask(int how, const sigset_t* set, sigset_t* old) {
  if (g_next_sigprocmask != nullptr) return g_next_sigprocmask(how, set, old);
  // Before start-up: what the C library's sigprocmask does.
  const int error = pthread_sigmask(how, set, old);
  if (error == 0) return 0;
  errno = error;
  return -1;
}

}  // namespace tleak::agent
