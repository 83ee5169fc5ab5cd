// The registers of a program's other threads as its exit scan begins: roots, as memcheck and
// LeakSanitizer take them. A thread still running as the program exits, or blocked in a system
// call, may hold the only pointer to a block in a register (a worker waiting in read() with its
// buffer in rbx, which no function below it saved on the stack): read from stacks and data
// alone, that block was a leak, and memcheck called it reachable.
//
// The agent cannot read another thread's registers without a signal, whose handler would
// interrupt the thread's system call for the program to see. tleak, the program's parent, may
// trace it instead: each thread is stopped for the moment its registers are read
// (PTRACE_SEIZE, PTRACE_INTERRUPT) and let go at once. The kernel restarts the thread's system
// call after such a stop, unseen, except a few that Linux ends with EINTR after any stop
// (epoll_wait, semop, sigtimedwait, socket calls with a timeout, ...): tleak sets those to run
// again itself, as the kernel does the others, unless a signal of the program's is pending (then
// EINTR is the program's due). Two it cannot run again (connect, io_uring_enter): a thread
// blocked in one is not stopped, and its registers are not read.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tleak/agent/protocol.h"

namespace tleak::diagnosis {

struct OtherThreadsRegisters {
  std::vector<std::uint64_t> words;  // every general-purpose register of each thread read
  // Each thread read: its stack pointer and thread pointer (x86-64; empty elsewhere).
  std::vector<agent::ThreadStack> stacks;
  std::uint32_t threads_read = 0;
  // Threads whose registers were not read: not traceable (the reason: `why_unread`, the first
  // met), blocked in a call a stop would end for good, or not stopped in time.
  std::uint32_t threads_unread = 0;
  std::string why_unread;
};

// The registers of every thread of process `pid` but `exiting_thread` (which reads its own).
// Waits at most `budget_ms` for the threads to stop; a thread that has not stopped by then (in
// an uninterruptible wait) is let go unread. Never reaps the process, nor leaves a thread traced
// or stopped.
OtherThreadsRegisters read_other_threads_registers(pid_t pid, pid_t exiting_thread, int budget_ms = 500);

}  // namespace tleak::diagnosis
