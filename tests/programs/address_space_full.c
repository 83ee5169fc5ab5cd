/* A program that leaves its address space full as it exits: it sets its own limit (RLIMIT_AS, what
 * `ulimit -v` sets) at what it has mapped plus argv[1] MiB (0 by default), with a block lost
 * (LOST) and a block kept (KEPT). The exit scan then finds no room for its work: with none, not
 * even for the live list it is sent; with 4 MiB, for that, but not for its map of the process.
 * Prints "limited" and exits with status 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static char* kept;

__attribute__((noinline)) static void lose(void) {
  char* volatile lost = malloc(1000); /* LOST */
  memset(lost, 1, 1000);
}

int main(int argc, char** argv) {
  const unsigned long room_mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 0;
  kept = malloc(4096); /* KEPT */
  memset(kept, 2, 4096);
  lose();
  unsigned long pages = 0;
  FILE* statm = fopen("/proc/self/statm", "r");
  if (statm == NULL || fscanf(statm, "%lu", &pages) != 1) return 1;
  fclose(statm);
  // The line is printed before the limit: stdout's buffer is taken now, not at the first write.
  printf("limited\n");
  fflush(stdout);
  const struct rlimit limit = {pages * 4096 + room_mib * 1048576, pages * 4096 + room_mib * 1048576};
  if (setrlimit(RLIMIT_AS, &limit) != 0) return 1;
  return 0;
}
