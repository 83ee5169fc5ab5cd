/* Threads that ended leave their stacks to the C library, which keeps them mapped for the next
 * threads it starts, dead frames and all. A worker loses a block in a call that leaves copies of
 * its address in its frame, then ends and is joined: memcheck reads no stack below where its thread
 * left off and calls the block lost; so must tleak (it read the ended thread's stack whole, and
 * called the block reachable).
 *   joined: three workers, one after another: directly lost 3 x 900 B (STALE, in dead_frames.h)
 *   reused: one worker, then a thread started on its stack, which holds a block in a local as
 *           the program exits (HELD, reachable), and a thread never joined whose result is a block
 *           (RESULT: its descriptor holds it, reachable for memcheck too): directly lost 900 B */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "dead_frames.h"

static int pipe_fds[2];
static volatile int holding;

static void* loser(void* unused) {
  (void)unused;
  lose_in_dead_frames();
  return NULL;
}

/* Waits until the program has exited, its block's address in its frame and nowhere else. */
static void* holder(void* unused) {
  (void)unused;
  char* volatile held = malloc(1200); /* HELD */
  memset(held, 4, 1200);
  holding = 1;
  wait_in_read(pipe_fds[0]);
  return (void*)held;
}

static void* returner(void* unused) {
  (void)unused;
  char* result = malloc(1500); /* RESULT */
  memset(result, 5, 1500);
  return result;
}

static int run(void* (*body)(void*), int join) {
  pthread_t thread;
  if (pthread_create(&thread, NULL, body, NULL) != 0) return 1;
  return join ? pthread_join(thread, NULL) : 0;
}

int main(int argc, char** argv) {
  const int reused = argc > 1 && strcmp(argv[1], "reused") == 0;
  if (argc > 1 && !reused && strcmp(argv[1], "joined") != 0) return 2;
  if (pipe(pipe_fds) != 0) return 1;
  for (int i = 0; i < (reused ? 1 : 3); ++i) {
    if (run(loser, 1) != 0) return 1;
  }
  if (reused) {
    if (run(holder, 0) != 0) return 1;
    while (!holding) usleep(1000);
    if (run(returner, 0) != 0) return 1;
    usleep(50000); /* the holder into its call, the returner ended */
  }
  printf("exiting\n");
  return 0;
}
