// A program that ends itself with a signal after its own teardown: CPython, after an unhandled
// KeyboardInterrupt (Ctrl-C), finalizes the interpreter and then sends itself SIGINT with the
// default action, so that its parent sees it killed by SIGINT; C programs re-raise a signal they
// caught the same way once they have cleaned up. The interposed kill and raise (interpose.cc) tell
// the agent first when the signal will end the process there and then, so that what the program
// leaves allocated is judged, as at _exit (agent.h, before_ending_signal).
#pragma once

#include <sys/types.h>

namespace tleak::agent {

// Whether `signal`, sent by this thread to its own process (kill with its pid, or raise), ends the
// process before the call returns: its default action terminates the process (not the ignored
// SIGCHLD, SIGURG, SIGWINCH, nor SIGCONT or a stop signal), its action is the default one, and this
// thread does not block it (so the kernel delivers it to this thread, or, for SIGKILL, to every
// thread). A handled or blocked signal lets the program go on: no scan then.
bool signal_ends_process(int signal);

namespace real {

// The definitions the program would have called without tleak (dlsym(RTLD_NEXT)), found at
// start-up.
int kill(pid_t pid, int signal);
int raise(int signal);

}  // namespace real
}  // namespace tleak::agent
