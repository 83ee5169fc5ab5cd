/* A malloc-heavy program for comparing trackers: THREADS threads (argv[1], default 1) each run
 * ROUNDS (argv[2], default 2,000,000) allocate/free pairs of 16 B - 4 KiB, from a call chain a
 * dozen frames deep (so a 12-frame stack is all real frames), keeping a ring of 64 live blocks.
 * With "timed" (argv[3]), it prints to stderr when each thread ended, with the CPU time it used,
 * and when the last did, counted from the threads' start ("thread ended 0.253 s, cpu 0.249 s",
 * "work 0.339 s"): under a tracker whose own thread shares the cores, whether the threads kept
 * pace with each other, and how much of the cores' time was the program's own. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long rounds = 2000000;
static int timed;
static struct timespec started;

static double seconds_since_start(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)(now.tv_sec - started.tv_sec) + (double)(now.tv_nsec - started.tv_nsec) / 1e9;
}

__attribute__((noinline)) static void* leaf(size_t size) {
  char* p = malloc(size);
  p[0] = 1;
  return p;
}

__attribute__((noinline)) static void* nest(int depth, size_t size) {
  void* p = depth == 0 ? leaf(size) : nest(depth - 1, size);
  __asm__ volatile("" ::: "memory");  /* keeps each level a real frame */
  return p;
}

static void* work(void* arg) {
  (void)arg;
  void* ring[64] = {0};
  unsigned long sum = 0;
  for (long i = 0; i < rounds; ++i) {
    const size_t size = 16 + (size_t)((i * 2654435761u) % 4080);
    free(ring[i % 64]);
    ring[i % 64] = nest((int)(i % 4) + 8, size);
    sum += ((unsigned char*)ring[i % 64])[0];
  }
  for (int i = 0; i < 64; ++i) free(ring[i]);
  if (timed) {
    struct timespec cpu;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
    fprintf(stderr, "thread ended %.3f s, cpu %.3f s\n", seconds_since_start(),
            (double)cpu.tv_sec + (double)cpu.tv_nsec / 1e9);
  }
  return (void*)sum;
}

int main(int argc, char** argv) {
  const int threads = argc > 1 ? atoi(argv[1]) : 1;
  if (argc > 2) rounds = atol(argv[2]);
  timed = argc > 3 && strcmp(argv[3], "timed") == 0;
  if (threads < 1 || threads > 64 || rounds < 1) return 2;
  clock_gettime(CLOCK_MONOTONIC, &started);
  pthread_t t[64];
  for (int i = 0; i < threads; ++i) pthread_create(&t[i], NULL, work, NULL);
  for (int i = 0; i < threads; ++i) pthread_join(t[i], NULL);
  if (timed) fprintf(stderr, "work %.3f s\n", seconds_since_start());
  printf("%d x %ld pairs\n", threads, rounds);
  return 0;
}
