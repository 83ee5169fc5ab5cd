#include "unwinder_signals.h"

#include <dlfcn.h>
#include <errno.h>
// Local unwinding only: the names libunwind.so itself exports.
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <link.h>
#include <pthread.h>

#include <cstdint>

namespace tleak::agent {
namespace {

using SigprocmaskFn = int (*)(int, const sigset_t*, sigset_t*);

SigprocmaskFn g_next_sigprocmask = nullptr;
// libunwind's executable segment; empty until found.
std::uintptr_t g_unwinder_start = 0, g_unwinder_end = 0;

int find_unwinder_code(dl_phdr_info* info, size_t, void* probe_arg) {
  const auto probe = reinterpret_cast<std::uintptr_t>(probe_arg);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const std::uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) != 0 && probe >= start && probe < start + ph.p_memsz) {
      g_unwinder_start = start;
      g_unwinder_end = start + ph.p_memsz;
      return 1;
    }
  }
  return 0;
}

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
  dl_iterate_phdr(find_unwinder_code, reinterpret_cast<void*>(&unw_backtrace));
}

bool is_unwinder_code(const void* caller) {
  const auto at = reinterpret_cast<std::uintptr_t>(caller);
  return at >= g_unwinder_start && at < g_unwinder_end;
}

int real_sigprocmask(int how, const sigset_t* set, sigset_t* old) {
  if (g_next_sigprocmask != nullptr) return g_next_sigprocmask(how, set, old);
  // Before start-up: what the C library's sigprocmask does.
  const int error = pthread_sigmask(how, set, old);
  if (error == 0) return 0;
  errno = error;
  return -1;
}

}  // namespace tleak::agent
