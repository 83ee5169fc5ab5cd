// Signals that end a process from outside: Ctrl-C's SIGINT, SIGTERM (kill, timeout, a job
// scheduler, multiprocessing's terminate()), SIGHUP (its terminal went away) and SIGPIPE (the
// reader of its output went away: `program | head`). Left to their default action, the kernel
// ends the process at once: nothing of it runs, no exit scan, every block unjudged (memcheck
// judges such a process). While the program leaves one of them to its default action, the agent's
// handler stands in for it: it scans the process as the signal found it, then restores the default
// action and sends the signal again, which ends the process the way it would have ended. The
// program sees the default action wherever it asks (sigaction, signal and their kin are
// interposed: interpose.cc), and its own handler or SIG_IGN replaces the agent's as it would have
// replaced the default.
#pragma once

#include <signal.h>

namespace tleak::agent {

// When this process's recording starts: the handler stands in for each of those signals whose
// action is the default one.
void stand_in_for_outside_signals();

// The program's sigaction: the C library's, except that an action the agent stands in for reads
// as the default one the program set, and setting SIG_DFL has the agent stand in again.
int program_sigaction(int signal, const struct sigaction* action, struct sigaction* old);

// signal(), bsd_signal() and sysv_signal() (their flags and masks, as the C library sets them),
// and sigset(), through program_sigaction for the signals the agent stands in for. False when
// `signal` is not one of them: the caller passes the call on.
bool is_outside_signal(int signal);
sighandler_t program_signal(int signal, sighandler_t handler, bool system_v);
sighandler_t program_sigset(int signal, sighandler_t disposition);

// Before the program's own kill or raise of `signal` that ends the process in that call: the
// kernel's action is the default one again, so that the call ends it there and then, as it would
// have (the agent scanned first, if it could: ending_signal.h).
void stand_down(int signal);

// Ends this process by `signal`'s default action, from the agent's handler or once the thread the
// signal interrupted inside the agent has left it. Returns only if the signal did not end it.
void end_by_signal(int signal);

}  // namespace tleak::agent
