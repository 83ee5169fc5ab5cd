#include "ending_signal.h"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

#include "next_symbol.h"

namespace tleak::agent {
namespace {

using KillFunction = int (*)(pid_t, int);
using RaiseFunction = int (*)(int);
using AbortFunction = void (*)();
std::atomic<KillFunction> g_next_kill{nullptr};
std::atomic<RaiseFunction> g_next_raise{nullptr};
std::atomic<AbortFunction> g_next_abort{nullptr};

// Resolved before the program's code runs: a signal handler's kill must not be the one to call the
// loader.
__attribute__((constructor)) void find_next_signal_calls() {
  next_symbol(g_next_kill, "kill");
  next_symbol(g_next_raise, "raise");
  next_symbol(g_next_abort, "abort");
}

// The action the program set: this sigaction is the agent's own (interpose.cc), which reads
// SIGINT, SIGTERM, SIGHUP and SIGPIPE as SIG_DFL where its handler stands in (outside_signals.h).
bool has_default_action(int signal) {
  struct sigaction action;
  if (sigaction(signal, nullptr, &action) != 0) return false;
  return (action.sa_flags & SA_SIGINFO) == 0 && action.sa_handler == SIG_DFL;
}

// Signals whose default action is not to end the process (signal(7)).
bool default_action_terminates(int signal) {
  switch (signal) {
    case SIGCHLD:
    case SIGURG:
    case SIGWINCH:
    case SIGCONT:
    case SIGSTOP:
    case SIGTSTP:
    case SIGTTIN:
    case SIGTTOU:
      return false;
    default:
      return true;
  }
}

}  // namespace

bool signal_ends_process(int signal) {
  if (signal <= 0 || signal >= NSIG || !default_action_terminates(signal)) return false;
  if (signal == SIGKILL) return true;
  if (!has_default_action(signal)) return false;
  sigset_t blocked;
  if (pthread_sigmask(SIG_BLOCK, nullptr, &blocked) != 0) return false;
  return sigismember(&blocked, signal) == 0;
}

bool abort_ends_process() { return has_default_action(SIGABRT); }

namespace real {

int kill(pid_t pid, int signal) {
  if (const KillFunction next = next_symbol(g_next_kill, "kill")) return next(pid, signal);
  return static_cast<int>(::syscall(SYS_kill, pid, signal));
}

int raise(int signal) {
  if (const RaiseFunction next = next_symbol(g_next_raise, "raise")) return next(signal);
  return static_cast<int>(::syscall(SYS_tgkill, getpid(), gettid(), signal));
}

void abort() {
  if (const AbortFunction next = next_symbol(g_next_abort, "abort")) next();
  // No C library abort found: what it comes to.
  for (;;) {
    ::syscall(SYS_tgkill, getpid(), gettid(), SIGABRT);
    ::syscall(SYS_exit_group, 127);
  }
}

}  // namespace real
}  // namespace tleak::agent
