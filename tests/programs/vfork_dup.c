/* A vfork child shares the parent's memory, the agent's with it, until it execs or exits.
 *   "dup" (or nothing): it puts a descriptor on the agent's own number (900, where the agent keeps
 *   its channel under the usual limit on descriptors) before it execs, as posix_spawn's file actions
 *   may; the child's descriptors are its own, and the parent's channel must stay where it is.
 *   "exit": its exec fails and it calls exit() where _exit was meant (a common slip): the exit
 *   handlers run in the child, the agent's with them, which must not end the parent's recording.
 *   LOST: the parent, after the child ended, loses 3 blocks of 1,000 B. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void* volatile sink;

int main(int argc, char** argv) {
  const int exits = argc > 1 && strcmp(argv[1], "exit") == 0;
  const pid_t child = vfork();
  if (child < 0) return 1;
  if (child == 0) {
    if (exits) {
      execl("/nonexistent/tleak-test-program", "none", (char*)NULL);
      exit(127);
    }
    dup2(1, 900);
    execl("/bin/true", "true", (char*)NULL);
    _exit(127);
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != (exits ? 127 : 0)) return 1;
  for (int i = 0; i < 3; ++i) sink = malloc(1000); /* LOST */
  sink = NULL;
  printf("vfork done\n");
  return 0;
}
