/* A process with 128 MiB of heap (KEPT, 1 MiB blocks written through) forks a copy that allocates
 * once and leaves by _exit: under `tleak run --record-fork` the copy is recorded, and its exit scan
 * reads the heap it inherited as roots. Meanwhile this process watches the copy's private memory
 * (Private_Dirty in /proc/PID/smaps_rollup) until it has exited, and prints its peak: what the copy
 * made its own of the pages it shares with this process. Expected: a few MiB (the copy's stack, the
 * agent's own pages), not the 128 MiB it inherited. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { kBlocks = 128, kBlockBytes = 1 << 20 };
static char* kept[kBlocks];

static long private_dirty_kib(pid_t pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/smaps_rollup", (int)pid);
  FILE* f = fopen(path, "r");
  if (f == NULL) return -1;
  char line[256];
  long kib = -1;
  while (fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, "Private_Dirty:", 14) == 0) kib = atol(line + 14);
  }
  fclose(f);
  return kib;
}

int main(void) {
  for (int i = 0; i < kBlocks; ++i) {
    kept[i] = malloc(kBlockBytes); /* KEPT */
    memset(kept[i], i + 1, kBlockBytes);
  }
  const pid_t copy = fork();
  if (copy < 0) return 2;
  if (copy == 0) {
    char* volatile mine = malloc(100); /* COPY */
    memset(mine, 7, 100);
    _exit(0);
  }
  long peak = 0;
  int status = 0;
  while (waitpid(copy, &status, WNOHANG) == 0) {
    const long kib = private_dirty_kib(copy);
    if (kib > peak) peak = kib;
    usleep(1000);
  }
  printf("copy exited %d, its private memory peaked at %ld MiB\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1,
         peak / 1024);
  return 0;
}
