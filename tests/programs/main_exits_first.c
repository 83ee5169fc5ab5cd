/* The main thread ends first (pthread_exit) and another thread calls exit: the exit scan then runs
 * on that thread, and the process's /proc/self view (the main thread's) is empty. The worker joins
 * the main thread before anything else, so the main thread has ended (its thread-exit handlers
 * run) whatever the scheduler does: under a loaded machine the worker had run to exit() before
 * the main thread got to pthread_exit, and the scan then read a live main thread's whole stack
 * (under jemalloc, 2 of 10 runs read the lost block reachable).
 *   LOST:   1,000 B whose only pointer is gone: a true leak.
 *   KEPT:   2,000 B held by a global: reachable at exit.
 * Expected: leaked exactly 1,000 B (memcheck: 1,000 B definitely lost), KEPT reachable. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char* kept;
static pthread_t main_thread;

__attribute__((noinline)) static void lose(void) {
  char* volatile lost = malloc(1000); /* LOST */
  memset(lost, 1, 1000);
}

static void* worker(void* unused) {
  (void)unused;
  pthread_join(main_thread, NULL);
  lose();
  kept = malloc(2000); /* KEPT */
  memset(kept, 2, 2000);
  printf("worker exits the process\n");
  fflush(stdout);
  exit(0);
}

int main(void) {
  main_thread = pthread_self();
  pthread_t thread;
  pthread_create(&thread, NULL, worker, NULL);
  pthread_exit(NULL);
}
