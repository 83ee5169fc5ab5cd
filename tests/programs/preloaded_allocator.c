/* Run with another malloc preloaded (LD_PRELOAD=libjemalloc.so.2, as servers often are): keeps 4 KiB
 * per iteration (leaky) or frees it (fixed), with marks, and says whether jemalloc itself served
 * a block the program asked malloc for (its own statistics: stats.allocated grows by the block),
 * so that the same output with and without tleak shows that the program kept its allocator.
 * Expected: leaky: growth of 4096 B per iteration at the KEEP line, 30 allocations; fixed: every
 * site bounded. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tleak/marks.h>

typedef int (*mallctl_fn)(const char*, void*, size_t*, void*, size_t);

/* jemalloc's count of bytes allocated, or 0 if jemalloc is not the program's allocator. */
static size_t jemalloc_allocated(mallctl_fn mallctl) {
  if (mallctl == NULL) return 0;
  unsigned long long epoch = 1;
  size_t epoch_size = sizeof epoch;
  mallctl("epoch", &epoch, &epoch_size, &epoch, epoch_size); /* refreshes the statistics */
  size_t allocated = 0, size = sizeof allocated;
  if (mallctl("stats.allocated", &allocated, &size, NULL, 0) != 0) return 0;
  return allocated;
}

struct node {
  struct node* next;
  char payload[4096 - sizeof(struct node*)];
};

/* Globals: blocks that escape, which the compiler may not elide. */
static struct node* kept;
static char* volatile big;

int main(int argc, char** argv) {
  const int leaky = argc > 1 && strcmp(argv[1], "leaky") == 0;
  const mallctl_fn mallctl = (mallctl_fn)dlsym(RTLD_DEFAULT, "mallctl");
  for (int i = 0; i < 30; ++i) {
    struct node* n = malloc(sizeof *n); /* KEEP */
    memset(n, i, sizeof *n);
    n->next = kept;
    kept = n;
    if (!leaky) {
      kept = n->next;
      free(n);
    }
    tleak_mark_iteration();
  }
  const size_t before = jemalloc_allocated(mallctl);
  big = malloc(1 << 20); /* BIG */
  memset(big, 1, 1 << 20);
  const size_t after = jemalloc_allocated(mallctl);
  printf("allocator: %s\n", mallctl == NULL          ? "not jemalloc"
                            : after >= before + (1 << 20) ? "jemalloc served the program's malloc"
                                                          : "jemalloc present, but malloc went elsewhere");
  free(big);
  while (kept) {
    struct node* next = kept->next;
    free(kept);
    kept = next;
  }
  return 0;
}
