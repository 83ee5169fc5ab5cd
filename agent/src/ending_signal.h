// A program that ends itself with a signal after its own teardown: CPython, after an unhandled
// KeyboardInterrupt (Ctrl-C), finalizes the interpreter and then sends itself SIGINT with the
// default action, so that its parent sees it killed by SIGINT; C programs re-raise a signal they
// caught the same way once they have cleaned up. The interposed kill and raise (interpose.cc) tell
// the agent first when the signal will end the process there and then, so that what the program
// leaves allocated is judged, as at _exit (agent.h, before_ending_signal). So does abort() where the
// program (or a library of its, as libstdc++'s std::terminate after an uncaught exception) calls it;
// the C library's own calls (a failed assert, a heap check) do not reach the agent.
#pragma once

#include <sys/types.h>

namespace tleak::agent {

// Whether `signal`, sent by this thread to its own process (kill with its pid, or raise), ends the
// process before the call returns: its default action terminates the process (not the ignored
// SIGCHLD, SIGURG, SIGWINCH, nor SIGCONT or a stop signal), its action is the default one, and this
// thread does not block it (so the kernel delivers it to this thread, or, for SIGKILL, to every
// thread). A handled or blocked signal lets the program go on: no scan then.
bool signal_ends_process(int signal);

// Whether abort() ends the process without running any code of the program's first: SIGABRT's
// action is the default one (abort unblocks it itself). A handler might return to the program
// (test frameworks catch SIGABRT and jump back to their runner): no scan then.
bool abort_ends_process();

namespace real {

// The definitions the program would have called without tleak (dlsym(RTLD_NEXT)), found at
// start-up.
int kill(pid_t pid, int signal);
int raise(int signal);
[[noreturn]] void abort();

}  // namespace real
}  // namespace tleak::agent
