/* More threads alive at once than the agent has thread buffers (4,096): argv[1] threads (default
 * 4,200), each allocating 100 B (EACH) and freeing it while all are alive, then ending.
 * Expected: the threads that found a buffer are recorded exactly (allocations == frees, none live
 * at the last sample), the rest are counted in a note of the report, and the program runs as
 * without tleak. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_barrier_t all_alive, all_done;

static void* worker(void* unused) {
  (void)unused;
  pthread_barrier_wait(&all_alive);
  char* volatile p = malloc(100); /* EACH */
  memset(p, 1, 100);
  free(p);
  pthread_barrier_wait(&all_done);
  return NULL;
}

int main(int argc, char** argv) {
  const int threads = argc > 1 ? atoi(argv[1]) : 4200;
  if (threads < 1 || threads > 100000) return 2;
  pthread_t* ids = calloc((size_t)threads, sizeof *ids);
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  pthread_attr_setstacksize(&attributes, 64 * 1024);
  pthread_barrier_init(&all_alive, NULL, (unsigned)threads);
  pthread_barrier_init(&all_done, NULL, (unsigned)threads);
  for (int i = 0; i < threads; ++i) {
    if (pthread_create(&ids[i], &attributes, worker, NULL) != 0) {
      fprintf(stderr, "thread %d not created\n", i);
      return 1;
    }
  }
  for (int i = 0; i < threads; ++i) pthread_join(ids[i], NULL);
  // A time sample due during the threads' burst is taken by a thread between its malloc and its
  // free (one of the 100 B still live): past the sample period, this allocation takes the next
  // one, after every free, whatever the machine's load.
  usleep(150 * 1000);
  free(malloc(1)); /* SETTLE */
  free(ids);
  printf("%d threads done\n", threads);
  return 0;
}
