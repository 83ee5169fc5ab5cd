#include "memory_handoff.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <valgrind/valgrind.h>

#include <climits>

namespace tleak::cli {
namespace {

constexpr std::size_t kReleaserStack = 64 * 1024;

// Runs on its own stack in tleak's memory, with tleak's thread pointer: system calls only (no C
// library function that could touch tleak's state). Returns nothing: it exits by the system call.
int release_after_tleak(void* argument) {
  const int* ends = static_cast<const int*>(argument);
  const int waits_on = ends[0];
  // Its copy of the write end first: while it is open the read below never ends.
  syscall(SYS_close, ends[1]);
  const auto close_from = [waits_on](unsigned first, unsigned last) {
    if (first > last) return;
    if (syscall(SYS_close_range, first, last, 0u) == 0) return;
    for (unsigned fd = first; fd <= last && fd < 65536; ++fd) {  // before Linux 5.9
      if (static_cast<int>(fd) != waits_on) syscall(SYS_close, fd);
    }
  };
  if (waits_on > 0) close_from(0u, static_cast<unsigned>(waits_on - 1));
  close_from(static_cast<unsigned>(waits_on + 1), UINT_MAX);
  // Returns once no write end is left open: tleak's closes as it exits.
  char byte;
  while (syscall(SYS_read, waits_on, &byte, 1) != 0) {
  }
  syscall(SYS_exit, 0);
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
  // No exit signal: nobody waits for it; once tleak is gone, the system's reaper collects it.
  clone(release_after_tleak, static_cast<char*>(stack) + kReleaserStack, CLONE_VM | CLONE_UNTRACED, task_ends);
  close(ends[0]);
  // ends[1] stays open until tleak exits.
}

}  // namespace tleak::cli
