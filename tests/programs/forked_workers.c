/* Forks three workers, as a DataLoader or a process pool does, each a copy of the program that goes
 * on allocating: every worker keeps a block per iteration (WORKER_KEEP: 1,000 B, 40 marked
 * iterations: growth), frees scratch (WORKER_SCRATCH), and frees a block it inherited from the
 * parent (PARENT, allocated before the fork). The parent waits for them, allocates a little more
 * (PARENT_AFTER) and prints "workers done". Expected under `tleak run --record-fork`: one worker's
 * recording, from its first allocation on: its growth, none of the parent's sites, no exit scan;
 * the other two counted. Without it: the parent's, and a note on the three copies. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tleak/marks.h"

enum { kWorkers = 3, kIterations = 40 };
static void* kept[kIterations];

static void work(void* inherited) {
  for (int i = 0; i < kIterations; ++i) {
    kept[i] = malloc(1000); /* WORKER_KEEP */
    free(malloc(300));      /* WORKER_SCRATCH */
    tleak_mark_iteration();
  }
  free(inherited);
}

int main(void) {
  void* inherited = malloc(5000); /* PARENT */
  fflush(stdout);
  pid_t workers[kWorkers];
  for (int w = 0; w < kWorkers; ++w) {
    workers[w] = fork();
    if (workers[w] < 0) return 1;
    if (workers[w] == 0) {
      work(inherited);
      exit(0);
    }
  }
  int failed = 0;
  for (int w = 0; w < kWorkers; ++w) {
    int status = 0;
    if (waitpid(workers[w], &status, 0) != workers[w] || !WIFEXITED(status) || WEXITSTATUS(status) != 0) failed = 1;
  }
  for (int i = 0; i < 10; ++i) free(malloc(77)); /* PARENT_AFTER */
  free(inherited);
  printf("workers done\n");
  return failed;
}
