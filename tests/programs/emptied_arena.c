/* A worker thread's malloc calls go to a heap of its own (a glibc arena), which outlives the
 * thread. The worker copies the address of a block the main thread made into a table of its own,
 * frees the table and ends; the main thread then loses the block. Nothing the program can reach
 * points to it: memcheck calls it lost; so must tleak (it read the worker's heap, left with no
 * block in use, as a root, and the freed table's words made the block reachable).
 *   directly lost: 3,000 B (LOST) */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

void* volatile lost;

static void* worker(void* unused) {
  (void)unused;
  uintptr_t* volatile table = malloc(4096);
  for (int i = 0; i < 512; ++i) table[i] = (uintptr_t)lost;
  free(table);
  return NULL;
}

int main(void) {
  lost = malloc(3000); /* LOST */
  pthread_t thread;
  if (pthread_create(&thread, NULL, worker, NULL) != 0) return 1;
  pthread_join(thread, NULL);
  lost = NULL;
  printf("exiting\n");
  return 0;
}
