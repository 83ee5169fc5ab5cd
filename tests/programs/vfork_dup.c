/* A vfork child (as posix_spawn's file actions do) puts a descriptor on the agent's own number
 * (900, where the agent keeps its channel under the usual limit on descriptors) before it execs.
 * The child shares the parent's memory but not its descriptors: the parent's channel must stay where
 * it is.
 *   LOST: the parent, after the child ended, loses 3 blocks of 1,000 B. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void* volatile sink;

int main(void) {
  const pid_t child = vfork();
  if (child < 0) return 1;
  if (child == 0) {
    dup2(1, 900);
    execl("/bin/true", "true", (char*)NULL);
    _exit(127);
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
  for (int i = 0; i < 3; ++i) sink = malloc(1000); /* LOST */
  sink = NULL;
  printf("vfork done\n");
  return 0;
}
