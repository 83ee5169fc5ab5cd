/* Keeps a 4 KiB block every 5 ms for 600 ms and never marks: tleak samples it by time.
 * Expected (--sample-every 50ms): growth at the KEEP line, about 40 KiB per 50 ms sample, said
 * per 50 ms, never per iteration (the program has no loop tleak knows of). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kBlocks = 120, kBytes = 4096 };
static char* kept[kBlocks];

int main(void) {
  const struct timespec pause = {0, 5 * 1000 * 1000};
  for (int i = 0; i < kBlocks; ++i) {
    kept[i] = malloc(kBytes); /* KEEP */
    memset(kept[i], i, kBytes);
    nanosleep(&pause, NULL);
  }
  return 0;
}
