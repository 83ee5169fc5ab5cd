// The registers of a program's other threads as its exit scan begins: roots, as memcheck and
// LeakSanitizer take them. A thread still running as the program exits, or blocked in a system
// call, may hold the only pointer to a block in a register (a worker waiting in read() with its
// buffer in rbx, which no function below it saved on the stack): read from stacks and data
// alone, that block was a leak, and memcheck called it reachable.
//
// The agent cannot read another thread's registers without a signal, whose handler would
// interrupt the thread's system call for the program to see. tleak, the program's parent, may
// trace it instead: each thread is stopped (PTRACE_SEIZE, PTRACE_INTERRUPT), its registers read,
// and let go at once or once the exit scan is done (StoppedThreads). The kernel restarts the
// thread's system call after such a stop, unseen, except a few that Linux ends with EINTR after
// any stop (epoll_wait, semop, sigtimedwait, socket calls with a timeout, ...): tleak sets those
// to run again itself, as the kernel does the others, unless a signal of the program's is pending
// (then EINTR is the program's due). Two it cannot run again (connect, io_uring_enter): a thread
// blocked in one is not stopped, and its registers are not read.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
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

// The registers of every thread of process `pid` but `exiting_thread` (which reads its own), read
// as the object is made; the threads read stay stopped until release() (or the object's end, or
// `hold_ms` at most: a lock the exiting thread waits for may be held by one of them, such as the
// agent's own while that thread maps its first buffer; the PyTorch loop's scan takes about 40 ms,
// and one of a heap some hundred times larger still fits in the default), for an exit
// scan that reads the heap as they left it. Holding them is what LeakSanitizer does (its "stop the
// world"): a thread that went on moving a block's only pointer into blocks it had just allocated
// made that reachable block read as lost (tests/programs/pointer_moving_at_exit.c).
// Waits at most `budget_ms` for the threads to stop; a thread that has not stopped by then (in an
// uninterruptible wait) is let go unread. The threads are traced from a thread of tleak's that
// ends when they are let go: whatever happens, none is left stopped or traced. Never reaps the
// process.
inline constexpr int kRegistersBudgetMs = 500;
inline constexpr int kExitScanHoldMs = 5000;

class StoppedThreads {
 public:
  StoppedThreads(pid_t pid, pid_t exiting_thread, int budget_ms = kRegistersBudgetMs,
                 int hold_ms = kExitScanHoldMs);
  ~StoppedThreads();
  StoppedThreads(const StoppedThreads&) = delete;
  StoppedThreads& operator=(const StoppedThreads&) = delete;

  OtherThreadsRegisters& registers() { return registers_; }
  // Lets the threads go on (once; later calls do nothing).
  void release();
  // Whether threads were held and `hold_ms` ran out before release(): they ran on meanwhile.
  bool hold_ran_out();

 private:
  OtherThreadsRegisters registers_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool read_ = false, released_ = false, hold_ran_out_ = false;
  std::thread holder_;
};

// The same, each thread let go as soon as it is read.
OtherThreadsRegisters read_other_threads_registers(pid_t pid, pid_t exiting_thread,
                                                   int budget_ms = kRegistersBudgetMs);

}  // namespace tleak::diagnosis
