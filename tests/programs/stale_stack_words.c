/* A worker thread loses a block in a call that leaves copies of its address in its frame, then
 * blocks as the program exits: the copies lie below the thread's stack pointer, in dead frames.
 * Memcheck reads a thread's stack from its stack pointer up and calls the block lost; so must tleak
 * (it read the whole stack, and called it reachable).
 *   directly lost: 900 B (STALE, in dead_frames.h) */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "dead_frames.h"

static int pipe_fds[2];
static volatile int ready;

static void* worker(void* unused) {
  (void)unused;
  lose_in_dead_frames();
  ready = 1;
  wait_in_read(pipe_fds[0]);
  return NULL;
}

int main(void) {
  if (pipe(pipe_fds) != 0) return 1;
  pthread_t thread;
  if (pthread_create(&thread, NULL, worker, NULL) != 0) return 1;
  while (!ready) usleep(1000);
  usleep(50000); /* the worker into its call */
  printf("exiting\n");
  return 0;
}
