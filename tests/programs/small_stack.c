/* A thread on a 16 KiB stack (the least glibc allows is 16 KiB) that allocates with most of it used:
 * argv[1] bytes (default 5,000) taken by a local array first. Plain, it runs with up to about 8,500
 * bytes used; tleak's agent takes about 3 KiB more for each allocation it records, so 5,000 leaves
 * it room and a change that makes the agent's stack use grow fails here.
 * Expected: "ok", exit 0, the thread's blocks recorded (100 B allocated twice, freed). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) static void alloc_once(void) {
  char* volatile p = malloc(100); /* SMALL */
  free(p);
}

static void* worker(void* arg) {
  const size_t used = (size_t)arg;
  alloc_once();  /* first: every return address new to the unwinder */
  volatile char pad[used];
  memset((char*)pad, 0, used);
  alloc_once();
  return NULL;
}

int main(int argc, char** argv) {
  const size_t used = argc > 1 ? (size_t)atol(argv[1]) : 5000;
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  if (pthread_attr_setstacksize(&attributes, 16384) != 0) return 1;
  pthread_t thread;
  if (pthread_create(&thread, &attributes, worker, (void*)used) != 0) return 1;
  pthread_join(thread, NULL);
  printf("ok\n");
  return 0;
}
