/* A program that exits with every file descriptor it may have open taken: the exit scan cannot open
 * the process's memory map (/proc/self/maps) to find its roots. A block lost (LOST) and a block kept
 * (KEPT). Prints "exiting" and exits with status 0. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char* kept;

__attribute__((noinline)) static void lose(void) {
  char* volatile lost = malloc(1000); /* LOST */
  memset(lost, 1, 1000);
}

int main(void) {
  kept = malloc(4096); /* KEPT */
  memset(kept, 2, 4096);
  lose();
  printf("exiting\n");
  fflush(stdout);
  while (open("/dev/null", O_RDONLY) >= 0) {
  }
  return 0;
}
