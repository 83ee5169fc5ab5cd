// Where a signal handler returns to: the C library's trampoline (__restore_rt, which no dynamic
// symbol names), the frame of the kernel's signal frame. Read from the kernel's own record of an
// action the C library installs (a handler's return address would be a sanitizer's wrapper under
// one). 0 if it cannot be read.
#pragma once

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

namespace tleak::testing {

inline std::uintptr_t signal_trampoline() {
  struct sigaction action = {}, old = {};
  action.sa_handler = SIG_IGN;
  if (sigaction(SIGUSR2, &action, &old) != 0) return 0;
  struct KernelAction {  // the kernel's struct sigaction on x86-64
    void* handler;
    unsigned long flags;
    void* restorer;
    std::uint64_t mask;
  } installed = {};
  const long read = syscall(SYS_rt_sigaction, SIGUSR2, nullptr, &installed, sizeof installed.mask);
  sigaction(SIGUSR2, &old, nullptr);
  constexpr unsigned long kRestorer = 0x04000000;  // SA_RESTORER: the C library set its trampoline
  if (read != 0 || (installed.flags & kRestorer) == 0) return 0;
  return reinterpret_cast<std::uintptr_t>(installed.restorer);
}

}  // namespace tleak::testing
