/* A thread on a 16 KiB stack (the least glibc allows is 16 KiB) that allocates with most of it used:
 * argv[1] bytes (default 5,000) taken by a local array first. Plain, it runs with up to about 8,500
 * bytes used. Under tleak the deepest point is libunwind's: first (argv[2] absent) where every
 * return address is new to it, its slow path, which takes about 3.5 KiB more, so 5,000 leaves it
 * room; then ("warm") where the same call sites allocated once before, with nothing used, its
 * cached path, with room to 7,800 (7,000 while the agent built its stacks on the thread's stack).
 * A change that makes the agent's stack use grow fails here.
 * Expected: "ok", exit 0, the thread's blocks recorded (100 B allocated twice, freed). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) static void alloc_once(void) {
  char* volatile p = malloc(100); /* SMALL */
  free(p);
}

/* With `used` bytes of the stack taken first; the same call sites whatever `used` is. */
__attribute__((noinline)) static void alloc_below(size_t used) {
  volatile char pad[used > 0 ? used : 1];
  memset((char*)pad, 0, sizeof pad);
  alloc_once();
}

static size_t used_bytes;
static int warm;

static void* worker(void* arg) {
  (void)arg;
  if (warm) {
    for (int i = 0; i < 2; ++i) alloc_below(i == 0 ? 0 : used_bytes);
    return NULL;
  }
  alloc_once();  /* first: every return address new to the unwinder */
  volatile char pad[used_bytes];
  memset((char*)pad, 0, used_bytes);
  alloc_once();
  return NULL;
}

int main(int argc, char** argv) {
  used_bytes = argc > 1 ? (size_t)atol(argv[1]) : 5000;
  warm = argc > 2 && strcmp(argv[2], "warm") == 0;
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  if (pthread_attr_setstacksize(&attributes, 16384) != 0) return 1;
  pthread_t thread;
  if (pthread_create(&thread, &attributes, worker, NULL) != 0) return 1;
  pthread_join(thread, NULL);
  printf("ok\n");
  return 0;
}
