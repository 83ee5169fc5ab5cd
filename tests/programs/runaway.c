/* Keeps 1 MiB every millisecond, forever: only tleak's --max-live (or a signal) ends it. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(void) {
  void** kept = NULL;
  for (size_t n = 0;; ++n) {
    kept = realloc(kept, (n + 1) * sizeof *kept);
    kept[n] = malloc(1 << 20); /* RUNAWAY */
    memset(kept[n], 1, 1 << 20);
    const struct timespec pause = {0, 1000000};
    nanosleep(&pause, NULL);
  }
}
