/* Forks three workers, as a DataLoader or a process pool does, each a copy of the program that goes
 * on allocating: every worker keeps a block per iteration (WORKER_KEEP: 1,000 B, 40 marked
 * iterations: growth), frees scratch (WORKER_SCRATCH), frees a block it inherited from the parent
 * (PARENT, allocated before the fork), hangs a block of its own on one it inherited (HUNG, held only
 * there), loses one (WORKER_LOST, 123 B) and exits. The parent waits for them, allocates a little
 * more (PARENT_AFTER) and prints "workers done". Expected under `tleak run --record-fork`: one
 * worker's recording, from its first allocation on: its growth, none of the parent's sites; at its
 * exit, WORKER_LOST the one leak and HUNG reachable through the inherited block, though tleak never
 * saw that one; the other two workers counted. Without it: the parent's, and a note on the copies. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tleak/marks.h"

enum { kWorkers = 3, kIterations = 40 };
static void* kept[kIterations];

/* Calls of their own, early: the stack words their allocations left are written over by the loop's
 * (a stale word on the stack would keep a block reachable). */
__attribute__((noinline)) static void hang(void** holder) { holder[0] = malloc(456); /* HUNG */ }

__attribute__((noinline)) static void lose(void) {
  void* volatile lost = malloc(123); /* WORKER_LOST */
  lost = NULL;
}

static void work(void* inherited, void** holder) {
  hang(holder);
  lose();
  for (int i = 0; i < kIterations; ++i) {
    kept[i] = malloc(1000); /* WORKER_KEEP */
    free(malloc(300));      /* WORKER_SCRATCH */
    tleak_mark_iteration();
  }
  free(inherited);
}

int main(void) {
  void* inherited = malloc(5000); /* PARENT */
  /* Allocated before the fork, so a worker's recording never saw it: what a worker hangs on it is
   * reachable only through heap memory tleak does not know as a block. */
  void** holder = calloc(4, sizeof(void*));
  fflush(stdout);
  pid_t workers[kWorkers];
  for (int w = 0; w < kWorkers; ++w) {
    workers[w] = fork();
    if (workers[w] < 0) return 1;
    if (workers[w] == 0) {
      work(inherited, holder);
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
