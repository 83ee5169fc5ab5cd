// libunwind blocks every signal around each search of the loaded modules for unwind info: two
// sigprocmask system calls for every return address it has not seen before, and a program like
// PyTorch's import makes hundreds of thousands of them. Inside the agent's own stack capture the
// mask protects nothing (a signal handler that allocates meanwhile is passed straight through by
// the agent's re-entry flag, never unwound), so those two calls are answered without the kernel.
// Every other sigprocmask call, the program's own included, goes to the C library's.
#pragma once

#include <signal.h>

namespace tleak::agent {

// Finds libunwind's code and gives it per-thread caches. Call once, at start-up of a tracked process.
void unwinder_signals_init();

// Whether `caller` is in libunwind's code. With inside_agent() (agent.h): a call libunwind makes
// while it captures a stack for the agent (nothing else of the agent calls libunwind). A signal
// handler that interrupts a capture and calls sigprocmask itself is not libunwind: it gets the
// real one.
bool is_unwinder_code(const void* caller);

// The sigprocmask the program would have called without tleak.
int real_sigprocmask(int how, const sigset_t* set, sigset_t* old);

}  // namespace tleak::agent
