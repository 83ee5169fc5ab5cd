#include "sandbox_calls.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <linux/filter.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

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

// Reads `bytes` at `address` of this process's memory, which the program handed to the kernel: an
// address it made up must fail as the kernel's read of it would, not fault in the agent.
bool read_own(const void* address, void* out, std::size_t bytes) {
  const int saved_errno = errno;
  iovec local{out, bytes};
  iovec remote{const_cast<void*>(address), bytes};
  const ssize_t got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
  errno = saved_errno;
  return got == static_cast<ssize_t>(bytes);
}

// Whether a filter (a struct sock_fprog at `address`) may stop a call by more than an error.
bool filter_may_stop(const void* address) {
  sock_fprog program{};
  if (!read_own(address, &program, sizeof program) || program.len == 0 || program.len > BPF_MAXINSNS) return true;
  constexpr std::size_t kPiece = 64;
  sock_filter piece[kPiece];
  for (std::size_t at = 0; at < program.len; at += kPiece) {
    const std::size_t n = program.len - at < kPiece ? program.len - at : kPiece;
    if (!read_own(program.filter + at, piece, n * sizeof(sock_filter))) return true;
    for (std::size_t i = 0; i < n; ++i) {
      if (BPF_CLASS(piece[i].code) != BPF_RET) continue;
      if (BPF_RVAL(piece[i].code) != BPF_K) return true;
      const std::uint32_t action = piece[i].k & SECCOMP_RET_ACTION_FULL;
      if (action != SECCOMP_RET_ALLOW && action != SECCOMP_RET_LOG && action != SECCOMP_RET_ERRNO) return true;
    }
  }
  return false;
}

// Entering strict mode (`filter` false), or a filter's mode with the filter at `program`.
SandboxEffect effect_of_mode(bool filter, std::uintptr_t program) {
  return filter && !filter_may_stop(reinterpret_cast<const void*>(program)) ? SandboxEffect::kMayRefuse
                                                                            : SandboxEffect::kMayStop;
}

}  // namespace

SandboxEffect prctl_sandbox_effect(long option, unsigned long a2, unsigned long a3) {
  if (option != PR_SET_SECCOMP) return SandboxEffect::kNone;
  return effect_of_mode(a2 == SECCOMP_MODE_FILTER, a3);
}

SandboxEffect syscall_sandbox_effect(long number, long a1, long a2, long a3) {
  if (number == SYS_prctl) return prctl_sandbox_effect(a1, static_cast<unsigned long>(a2), static_cast<unsigned long>(a3));
  if (number != SYS_seccomp || (a1 != SECCOMP_SET_MODE_STRICT && a1 != SECCOMP_SET_MODE_FILTER)) return SandboxEffect::kNone;
  return effect_of_mode(a1 == SECCOMP_SET_MODE_FILTER, static_cast<std::uintptr_t>(a3));
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
