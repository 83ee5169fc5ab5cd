/* The main thread ends first (pthread_exit) and another thread calls exit: the exit scan then runs
 * on that thread, and the process's /proc/self view (the main thread's) is empty.
 *   LOST:   1,000 B whose only pointer is gone: a true leak.
 *   KEPT:   2,000 B held by a global: reachable at exit.
 * Expected: leaked exactly 1,000 B (memcheck: 1,000 B definitely lost), KEPT reachable. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char* kept;

__attribute__((noinline)) static void lose(void) {
  char* volatile lost = malloc(1000); /* LOST */
  memset(lost, 1, 1000);
}

static void* worker(void* unused) {
  (void)unused;
  lose();
  kept = malloc(2000); /* KEPT */
  memset(kept, 2, 2000);
  printf("worker exits the process\n");
  fflush(stdout);
  exit(0);
}

int main(void) {
  pthread_t thread;
  pthread_create(&thread, NULL, worker, NULL);
  pthread_exit(NULL);
}
