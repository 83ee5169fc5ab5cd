/* 8 threads allocate 2000 blocks each; every other block is handed to the next thread, which frees
 * it, so half the frees happen on another thread than the allocation. All joined, all freed.
 * Expected: the ALLOC site has exactly 16000 allocations and 16000 frees, 0 left. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 8
#define BLOCKS 2000

static void* handoff[THREADS][BLOCKS];
static pthread_barrier_t phase;

static void* work(void* arg) {
  const long me = (long)arg;
  void* mine[BLOCKS];
  for (int i = 0; i < BLOCKS; ++i) {
    mine[i] = malloc(16 + (size_t)(i % 7) * 8); /* ALLOC */
    if (i % 2 == 1) handoff[me][i] = mine[i];
  }
  pthread_barrier_wait(&phase);
  const long next = (me + 1) % THREADS;
  for (int i = 0; i < BLOCKS; ++i) {
    if (i % 2 == 1) free(handoff[next][i]);
    else free(mine[i]);
  }
  return NULL;
}

int main(void) {
  pthread_barrier_init(&phase, NULL, THREADS);
  pthread_t threads[THREADS];
  for (long t = 0; t < THREADS; ++t) pthread_create(&threads[t], NULL, work, (void*)t);
  for (int t = 0; t < THREADS; ++t) pthread_join(threads[t], NULL);
  printf("threads done\n");
  return 0;
}
