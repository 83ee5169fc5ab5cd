/* More blocks live at exit than one message of the exit scan's answer has bits for (65,512 bytes
 * of bitmap after its header: 524,096 blocks), so the answer goes out in pieces.
 *   reachable: 600,000 x 16 B (KEPT) from an array of their addresses (ARRAY, 4,800,000 B) that a
 *              global points to
 *   lost:      1,000 x 40 B (LOST), allocated last: above the kept ones in the heap, so that the
 *              scan's list, sorted by address, has them past the first piece's bits
 * Expected: leaked 40,000 B in 1,000 blocks; the kept blocks and the array reachable at exit. */
#include <stdlib.h>
#include <string.h>

#define KEPT_BLOCKS 600000
#define LOST_BLOCKS 1000

static char** kept;

__attribute__((noinline)) static void keep(void) {
  kept = malloc(KEPT_BLOCKS * sizeof(char*)); /* ARRAY */
  for (int i = 0; i < KEPT_BLOCKS; ++i) {
    kept[i] = malloc(16); /* KEPT */
    kept[i][0] = 1;
  }
}

/* A function of its own, so that no pointer to a lost block survives in main's frame or registers. */
__attribute__((noinline)) static void lose(void) {
  for (int i = 0; i < LOST_BLOCKS; ++i) {
    char* volatile p = malloc(40); /* LOST */
    memset(p, 2, 40);
  }
}

__attribute__((noinline)) static void scrub_stack(void) {
  volatile char junk[16384];
  memset((char*)junk, 0, sizeof junk);
}

int main(void) {
  keep();
  lose();
  scrub_stack();
  return 0;
}
