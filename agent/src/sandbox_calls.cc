#include "sandbox_calls.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <atomic>

#include "next_symbol.h"

namespace tleak::agent {
namespace {

std::atomic<int (*)(int, ...)> g_prctl{nullptr};
std::atomic<long (*)(long, ...)> g_syscall{nullptr};

// Resolved before the program's own code runs: the agent's own calls of syscall() come here too.
__attribute__((constructor)) void find_sandbox_calls() {
  next_symbol(g_prctl, "prctl");
  next_symbol(g_syscall, "syscall");
}

}  // namespace

bool prctl_enters_seccomp(long option) { return option == PR_SET_SECCOMP; }

bool syscall_enters_seccomp(long number, long first) {
  return (number == SYS_seccomp && (first == SECCOMP_SET_MODE_STRICT || first == SECCOMP_SET_MODE_FILTER)) ||
         (number == SYS_prctl && prctl_enters_seccomp(first));
}

namespace real {

int prctl(int option, unsigned long a2, unsigned long a3, unsigned long a4, unsigned long a5) {
  if (const auto f = next_symbol(g_prctl, "prctl")) return f(option, a2, a3, a4, a5);
  errno = ENOSYS;
  return -1;
}

long syscall(long number, long a1, long a2, long a3, long a4, long a5, long a6) {
  if (const auto f = next_symbol(g_syscall, "syscall")) return f(number, a1, a2, a3, a4, a5, a6);
  errno = ENOSYS;
  return -1;
}

}  // namespace real
}  // namespace tleak::agent
