#include "memory_handoff.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <valgrind/valgrind.h>

#include <climits>

namespace tleak::cli {
namespace {

constexpr std::size_t kReleaserStack = 64 * 1024;

// A system call that writes nothing of the calling thread's but its registers: the task below runs
// with tleak's thread pointer, while tleak goes on to exit, and the C library's syscall() would set
// that thread's errno on a failure. Returns what the kernel does (a failure as -errno).
long raw_syscall(long number, long a = 0, long b = 0, long c = 0) {
#if defined(__x86_64__)
  long result;
  asm volatile("syscall" : "=a"(result) : "a"(number), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
  return result;
#else
  return syscall(number, a, b, c);
#endif
}

// Runs on its own stack in tleak's memory, every signal blocked (tleak's handlers are not its to
// run): closes its copies of tleak's descriptors, waits for the pipe's end, exits.
int release_after_tleak(void* argument) {
  const int* ends = static_cast<const int*>(argument);
  const int waits_on = ends[0];
  // Its copy of the write end first: while it is open the read below never ends.
  raw_syscall(SYS_close, ends[1]);
  const auto close_from = [waits_on](unsigned first, unsigned last) {
    if (first > last) return;
    if (raw_syscall(SYS_close_range, first, last, 0) == 0) return;
    for (unsigned fd = first; fd <= last && fd < 65536; ++fd) {  // before Linux 5.9
      if (static_cast<int>(fd) != waits_on) raw_syscall(SYS_close, fd);
    }
  };
  if (waits_on > 0) close_from(0u, static_cast<unsigned>(waits_on - 1));
  close_from(static_cast<unsigned>(waits_on + 1), UINT_MAX);
  // Nothing writes to the pipe: the read ends at its end, once tleak (the last writer) has exited.
  char byte;
  raw_syscall(SYS_read, waits_on, reinterpret_cast<long>(&byte), 1);
  raw_syscall(SYS_exit, 0);
  return 0;
}

}  // namespace

void hand_memory_to_releaser() {
  if (RUNNING_ON_VALGRIND) return;
  int ends[2];
  if (pipe2(ends, O_CLOEXEC) != 0) return;
  void* stack = mmap(nullptr, kReleaserStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) {
    close(ends[0]);
    close(ends[1]);
    return;
  }
  static int task_ends[2];  // read by the task, in this very memory
  task_ends[0] = ends[0];
  task_ends[1] = ends[1];
  // No exit signal: nobody waits for it; once tleak is gone, the system's reaper collects it. It
  // starts with every signal blocked (the mask is the calling thread's at the clone).
  sigset_t every, before;
  sigfillset(&every);
  pthread_sigmask(SIG_BLOCK, &every, &before);
  clone(release_after_tleak, static_cast<char*>(stack) + kReleaserStack, CLONE_VM | CLONE_UNTRACED, task_ends);
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  close(ends[0]);
  // ends[1] stays open until tleak exits.
}

}  // namespace tleak::cli
