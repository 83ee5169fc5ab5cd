/* A child made by the clone system call itself, not fork(): no fork handler runs in it (some
 * sandboxes and process launchers start their children so). It allocates 200,000 blocks and keeps
 * 200, more than fills its copy of the thread's buffer, and leaves by exit(), whose handlers run.
 *   LOST: the parent, after the child ended, loses 3 blocks of 1,000 B: its only leaks.
 * The child's blocks are its own copy's, never the parent's. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void* volatile sink;

int main(void) {
  const pid_t child = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
  if (child < 0) return 1;
  if (child == 0) {
    for (int i = 0; i < 200000; ++i) {
      sink = malloc(48); /* CHILD */
      if (i % 1000 != 0) free(sink);
    }
    exit(0);
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
  for (int i = 0; i < 3; ++i) sink = malloc(1000); /* LOST */
  sink = NULL;
  printf("raw clone done\n");
  return 0;
}
