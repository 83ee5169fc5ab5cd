#include "outside_signals.h"

#include <errno.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>

#include "agent.h"
#include "next_symbol.h"
#include "unwinder_signals.h"

namespace tleak::agent {
namespace {

using SigactionFunction = int (*)(int, const struct sigaction*, struct sigaction*);
std::atomic<SigactionFunction> g_next_sigaction{nullptr};

// Resolved before the program's code runs: a signal handler's sigaction must not be the one to
// call the loader.
__attribute__((constructor)) void find_next_sigaction() { next_symbol(g_next_sigaction, "sigaction"); }

int real_sigaction(int signal, const struct sigaction* action, struct sigaction* old) {
  if (const SigactionFunction next = next_symbol(g_next_sigaction, "sigaction")) return next(signal, action, old);
  errno = ENOSYS;
  return -1;
}

// The action the program set last for each signal the agent stands in for (its flags and mask
// included), SIG_DFL until it sets one: what it reads back while the agent's handler is installed.
struct sigaction g_program_views[NSIG];

void on_outside_signal(int signal, siginfo_t*, void* context) {
  const int saved_errno = errno;
  if (scan_at_outside_signal(signal, static_cast<const ucontext_t*>(context))) end_by_signal(signal);
  errno = saved_errno;
}

bool is_ours(const struct sigaction& action) {
  return (action.sa_flags & SA_SIGINFO) != 0 && action.sa_sigaction == on_outside_signal;
}

// Every signal blocked while the handler runs: a second one (a signal sent twice, as timeout and a
// shell may) waits for the scan, which ends the process before it is delivered.
struct sigaction our_action() {
  struct sigaction ours{};
  ours.sa_sigaction = on_outside_signal;
  sigfillset(&ours.sa_mask);
  // Where the handler returns (it interrupted the agent, which acts on the signal as it leaves), the
  // agent's system calls go on as if nothing had come.
  ours.sa_flags = SA_SIGINFO | SA_RESTART;
  return ours;
}

}  // namespace

bool is_outside_signal(int signal) {
  return signal == SIGINT || signal == SIGTERM || signal == SIGHUP || signal == SIGPIPE;
}

void stand_in_for_outside_signals() {
  const struct sigaction ours = our_action();
  for (const int signal : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
    struct sigaction current{};
    if (real_sigaction(signal, nullptr, &current) != 0 || (current.sa_flags & SA_SIGINFO) != 0 ||
        current.sa_handler != SIG_DFL) {
      continue;
    }
    g_program_views[signal] = current;
    real_sigaction(signal, &ours, nullptr);
  }
}

int program_sigaction(int signal, const struct sigaction* action, struct sigaction* old) {
  if (!is_outside_signal(signal)) return real_sigaction(signal, action, old);
  struct sigaction current{};
  int result;
  if (action == nullptr) {
    result = real_sigaction(signal, nullptr, &current);
    if (result == 0 && is_ours(current)) current = g_program_views[signal];
  } else {
    const struct sigaction wanted = *action;  // `old` may be the same object
    const struct sigaction earlier_view = g_program_views[signal];
    result = real_sigaction(signal, &wanted, &current);
    if (result == 0 && is_ours(current)) current = earlier_view;
    // A default action: the agent's handler stands in for it again. What the program reads back
    // is what the kernel gave for its own action (the C library adds a flag and its restorer).
    if (result == 0 && wanted.sa_handler == SIG_DFL && recording_this_process()) {
      struct sigaction as_set{};
      real_sigaction(signal, nullptr, &as_set);
      g_program_views[signal] = as_set;
      const struct sigaction ours = our_action();
      real_sigaction(signal, &ours, nullptr);
    }
  }
  if (result == 0 && old != nullptr) *old = current;
  return result;
}

sighandler_t program_signal(int signal, sighandler_t handler, bool system_v) {
  struct sigaction action{}, old{};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  if (system_v) {
    action.sa_flags = SA_RESETHAND | SA_NODEFER;  // as the C library's sysv_signal
  } else {
    sigaddset(&action.sa_mask, signal);  // BSD semantics, as the C library's signal
    action.sa_flags = SA_RESTART;
  }
  if (program_sigaction(signal, &action, &old) != 0) return SIG_ERR;
  return old.sa_handler;
}

sighandler_t program_sigset(int signal, sighandler_t disposition) {
  sigset_t only, mask_before;
  sigemptyset(&only);
  sigaddset(&only, signal);
  struct sigaction old{};
  if (disposition == SIG_HOLD) {
    if (program_sigaction(signal, nullptr, &old) != 0 || real_sigprocmask(SIG_BLOCK, &only, &mask_before) != 0) {
      return SIG_ERR;
    }
  } else {
    struct sigaction action{};
    action.sa_handler = disposition;
    sigemptyset(&action.sa_mask);
    if (program_sigaction(signal, &action, &old) != 0 || real_sigprocmask(SIG_UNBLOCK, &only, &mask_before) != 0) {
      return SIG_ERR;
    }
  }
  return sigismember(&mask_before, signal) ? SIG_HOLD : old.sa_handler;
}

void stand_down(int signal) {
  if (!is_outside_signal(signal)) return;
  struct sigaction current{};
  if (real_sigaction(signal, nullptr, &current) != 0 || !is_ours(current)) return;
  real_sigaction(signal, &g_program_views[signal], nullptr);
}

void end_by_signal(int signal) {
  struct sigaction default_action{};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  real_sigaction(signal, &default_action, nullptr);
  syscall(SYS_tgkill, getpid(), gettid(), signal);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, signal);
  real_sigprocmask(SIG_UNBLOCK, &only, nullptr);
}

}  // namespace tleak::agent
