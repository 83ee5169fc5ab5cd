/* Allocates 64 blocks of 16 KiB at one line, then frees them one at a time, 5 ms apart, and
 * allocates nothing meanwhile, as a program's teardown does. It never marks: tleak samples it by
 * time. Expected (--sample-every 20ms): samples taken while it only frees, the BLOCK site's live
 * bytes stepping down through values between all 64 blocks (1 MiB) and none; bounded. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kBlocks = 64, kBytes = 16 * 1024 };
static char* blocks[kBlocks];

int main(void) {
  for (int i = 0; i < kBlocks; ++i) {
    blocks[i] = malloc(kBytes); /* BLOCK */
    memset(blocks[i], i, kBytes);
  }
  const struct timespec pause = {0, 5 * 1000 * 1000};
  for (int i = 0; i < kBlocks; ++i) {
    free(blocks[i]);
    nanosleep(&pause, NULL);
  }
  return 0;
}
