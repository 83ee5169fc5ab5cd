/* Leaves by _exit or _Exit, as os._exit and forked workers do: no exit handlers, no destructors.
 * argv[1]: "_exit" (status 0), "_Exit" (status 6), "thread": a second thread calls _exit(0) while
 * the main thread waits for it, "quick_exit" (status 0; an at_quick_exit handler frees KEPT first,
 * so that only 2,000 B are reachable), or "terminated": a child it forked sends it SIGTERM the moment it
 * says it calls _exit(0), as multiprocessing's terminate() does to a worker that is leaving (the
 * signal and the exit race; under tleak the exit scan, inside _exit, is not cut short).
 *   lost:       lost_node.h's node and its child: 168 B in 2 blocks
 *   reachable:  1000 B from a global (KEPT), 2000 B from main's own frame (ON_STACK)
 * Expected under tleak and memcheck alike: 168 B lost. */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lost_node.h"

static char* kept;

static void free_kept(void) {
  free(kept);
  kept = NULL;
}

static void* exit_from_thread(void* unused) {
  (void)unused;
  _exit(0);
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  kept = malloc(1000); /* KEPT */
  memset(kept, 1, 1000);
  char* volatile on_stack = malloc(2000); /* ON_STACK */
  memset(on_stack, 3, 2000);
  lose_node();
  scrub_stack();
  if (strcmp(argv[1], "_exit") == 0) _exit(0);
  if (strcmp(argv[1], "_Exit") == 0) _Exit(6);
  if (strcmp(argv[1], "quick_exit") == 0) {
    at_quick_exit(free_kept);
    quick_exit(0);
  }
  if (strcmp(argv[1], "terminated") == 0) {
    int fds[2];
    if (pipe(fds) != 0) return 2;
    const pid_t parent = getpid();
    if (fork() == 0) {
      char byte;
      if (read(fds[0], &byte, 1) == 1) kill(parent, SIGTERM);
      _exit(0);
    }
    (void)!write(fds[1], "x", 1);
    _exit(0);
  }
  if (strcmp(argv[1], "thread") == 0) {
    pthread_t thread;
    pthread_create(&thread, NULL, exit_from_thread, NULL);
    pthread_join(thread, NULL);
  }
  return 2;
}
