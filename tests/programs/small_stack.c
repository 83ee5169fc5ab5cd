/* A thread on a 16 KiB stack (the least glibc allows is 16 KiB) that allocates with most of it used:
 * argv[1] bytes (default 3,000) taken by a local array first. Plain, it runs with up to about 8,700
 * bytes used (from about 8,800 its own first memset, bound lazily by the dynamic linker there,
 * overflows). Under tleak the deepest point is libunwind's walk where a return address is new to
 * it (argv[2] absent: every one is, for the second allocation's call site), about 5-6 KiB below
 * malloc's frame, and it overflowed from 6,500 bytes used; or ("warm") where the same call sites
 * allocated once before with nothing used, less. The agent records an allocation made with less
 * than 8 KiB of stack left without its stack (stack_room.h): up to about 4,000 bytes used the
 * second allocation keeps its stack, past that it counts in "(no stack recorded)". It runs to about
 * 8,600 bytes used: the thread-local variables of the agent and libunwind (about 80 bytes) sit at
 * the top of every thread's stack. (Before the agent read the stack's bounds on a stack of its own
 * and bound its calls at load, that reading overflowed the thread's from about 7,800.)
 * Expected: "ok", exit 0, both blocks recorded (100 B allocated twice, freed). */
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
  used_bytes = argc > 1 ? (size_t)atol(argv[1]) : 3000;
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
