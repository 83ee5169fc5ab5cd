/* Blocks left at exit, each kind known: memcheck and tleak must agree on what is lost.
 *   directly lost:    3 x 1000 B  (DIRECT)
 *   indirectly lost:  a 200 B node (PARENT) whose only pointer to a 300 B child (CHILD) is lost with it
 *   reachable:        4096 B from a global (GLOBAL), 2048 B from a blocked thread's stack (THREAD)
 * Expected: leaked 3500 B in 5 blocks; the global's and the thread's blocks reachable at exit. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct parent {
  char* child;
  char pad[200 - sizeof(char*)];
};

static char* global_block;
static int pipe_fds[2];
static pthread_barrier_t started;

static void* holder(void* unused) {
  (void)unused;
  char* volatile mine = malloc(2048); /* THREAD */
  memset(mine, 7, 2048);
  pthread_barrier_wait(&started);
  char byte;
  while (read(pipe_fds[0], &byte, 1) != 0) { /* blocks until exit */
  }
  free(mine);
  return NULL;
}

/* Separate functions, so no pointer to a lost block survives in main's frame or registers. */
__attribute__((noinline)) static void lose_direct(void) {
  for (int i = 0; i < 3; ++i) {
    char* volatile p = malloc(1000); /* DIRECT */
    memset(p, 1, 1000);
  }
}

__attribute__((noinline)) static void lose_parent(void) {
  struct parent* volatile p = malloc(sizeof(struct parent)); /* PARENT */
  memset(p, 0, sizeof *p);
  p->child = malloc(300); /* CHILD */
  memset(p->child, 2, 300);
}

__attribute__((noinline)) static void scrub_stack(void) {
  volatile char junk[16384];
  memset((char*)junk, 0, sizeof junk);
}

int main(void) {
  if (pipe(pipe_fds) != 0) return 1;
  pthread_barrier_init(&started, NULL, 2);
  pthread_t thread;
  pthread_create(&thread, NULL, holder, NULL);
  pthread_barrier_wait(&started);
  global_block = malloc(4096); /* GLOBAL */
  memset(global_block, 3, 4096);
  lose_direct();
  lose_parent();
  scrub_stack();
  printf("exit-reachability done\n");
  return 0; /* the holder thread is still blocked in read() */
}
