/* A thread that allocates and frees all the while, as the program exits (main returns while it
 * runs): the exit scan reads the heap as that thread changes it.
 *   lost:      1,000 B (LOST), from main
 *   churned:   blocks of 32-95 B (CHURN), three at a time kept on the thread's stack, freed and
 *              allocated again without end
 * Expected: leaked exactly 1,000 B in 1 block. A churned block freed while the scan ran is no leak
 * (its free reaches tleak before the scan's answer); one allocated after the scan's list was made
 * is unjudged. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void* churn(void* unused) {
  (void)unused;
  void* volatile kept[3] = {0};
  for (unsigned long i = 0;; ++i) {
    free(kept[i % 3]);
    kept[i % 3] = malloc(32 + i % 64); /* CHURN */
  }
  return NULL;
}

/* A function of its own, so that no pointer to the lost block survives in main's frame or registers. */
__attribute__((noinline)) static void lose(void) {
  char* volatile p = malloc(1000); /* LOST */
  memset(p, 1, 1000);
}

int main(void) {
  pthread_t thread;
  if (pthread_create(&thread, NULL, churn, NULL) != 0) return 1;
  usleep(20000); /* the thread well under way */
  lose();
  return 0;
}
