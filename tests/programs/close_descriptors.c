/* Takes every descriptor it may have inherited away, as daemons and Python's os.closerange do,
 * then leaks a block and keeps another reachable.
 *   libc: close() on 3..1023, close_range(3, ~0U, 0), closefrom(3), and stdout put with dup2 and
 *         dup3 on every number from 900 to 1099 (where tleak's agent keeps its channel) before
 *         those are closed again. Expected: the program's output is its own, the report has the
 *         LEAK (1,000 B, unreachable) and the KEPT block (2,000 B, reachable), and an exit scan.
 *   raw:  the same descriptors closed with the close system call, past the C library; then it
 *         sleeps a second. Expected: tleak says in a note that the program took its channel away
 *         and that what came after is not in the report, and does not spin meanwhile. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static void* kept;

/* In a frame of its own: no pointer to the block is left in main's frame or registers. (This very
 * block once read as reachable: its address, from the live list, sat in a register the agent's
 * own scan spilled onto the stack it then read. memcheck and LeakSanitizer find it lost.) */
__attribute__((noinline)) static void leak_one(void) {
  char* volatile leaked = malloc(1000); /* LEAK */
  memset(leaked, 1, 1000);
}

int main(int argc, char** argv) {
  const int raw = argc > 1 && strcmp(argv[1], "raw") == 0;
  fflush(stdout);
  if (raw) {
    for (int fd = 3; fd < 1100; ++fd) syscall(SYS_close, fd);
  } else {
    for (int fd = 3; fd < 1024; ++fd) close(fd);
    close_range(3, ~0U, 0);
    closefrom(3);
    for (int fd = 900; fd < 1100; ++fd) {
      if (fd % 2 == 0) {
        dup2(STDOUT_FILENO, fd);
      } else {
        dup3(STDOUT_FILENO, fd, O_CLOEXEC);
      }
    }
    closefrom(900);
  }
  leak_one();
  kept = malloc(2000); /* KEPT */
  memset(kept, 2, 2000);
  if (raw) sleep(1);
  printf("descriptors closed (%s)\n", raw ? "raw" : "libc");
  return 0;
}
