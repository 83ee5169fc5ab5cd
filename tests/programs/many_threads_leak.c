/* 1,200 threads alive at once, each allocating, so that the agent holds 1,200 thread buffers, each
 * a region of its own memory; the last thread loses a block. The records of its allocation stay in
 * that thread's buffer, which the exit scan must never read as a root, however many such regions
 * the agent has (it used to exclude only the first 1,024).
 * Expected: the LOST site leaks 777 B in 1 block; each thread's EACH block is freed. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 1200

static pthread_barrier_t all_alive;

/* Separate functions, so no pointer to the lost block survives in a frame or register. */
__attribute__((noinline)) static void lose_block(void) {
  char* volatile p = malloc(777); /* LOST */
  memset(p, 1, 777);
}

__attribute__((noinline)) static void scrub_stack(void) {
  volatile char junk[8192];
  memset((char*)junk, 0, sizeof junk);
}

static void* work(void* arg) {
  char* volatile mine = malloc(64); /* EACH */
  memset(mine, 2, 64);
  if ((long)arg == THREADS - 1) {
    lose_block();
    scrub_stack();
  }
  pthread_barrier_wait(&all_alive);
  free(mine);
  return NULL;
}

int main(void) {
  pthread_barrier_init(&all_alive, NULL, THREADS + 1);
  pthread_attr_t small;
  pthread_attr_init(&small);
  pthread_attr_setstacksize(&small, 64 * 1024);
  static pthread_t threads[THREADS];
  for (long t = 0; t < THREADS; ++t) {
    if (pthread_create(&threads[t], &small, work, (void*)t) != 0) {
      fprintf(stderr, "pthread_create failed at %ld\n", t);
      return 1;
    }
  }
  pthread_barrier_wait(&all_alive);
  for (int t = 0; t < THREADS; ++t) pthread_join(threads[t], NULL);
  printf("many threads done\n");
  return 0;
}
