/* A loop that keeps 4 KiB per iteration in a list (leaky) or frees it (fixed), beside a 64 KiB
 * scratch buffer that every iteration frees. Marks each iteration.
 * Snapshots after iterations 10 ("early") and 20 ("late"). With "large" after the variant, six
 * buffers of 1 MiB each, from six lines, live from before the loop to after it: six bounded sites,
 * each larger than the growing one.
 * Expected: leaky: growth of 4096 B per iteration at the KEEP line; fixed: every site bounded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tleak/marks.h>

struct node {
  struct node* next;
  char payload[4096 - sizeof(struct node*)];
};

static struct node* kept;

int main(int argc, char** argv) {
  const int leaky = argc > 1 && strcmp(argv[1], "leaky") == 0;
  const int large = argc > 2 && strcmp(argv[2], "large") == 0;
  enum { kLarge = 1 << 20 };
  char* big[6] = {0};
  if (large) {
    big[0] = malloc(kLarge);
    big[1] = malloc(kLarge);
    big[2] = malloc(kLarge);
    big[3] = malloc(kLarge);
    big[4] = malloc(kLarge);
    big[5] = malloc(kLarge);
    for (int b = 0; b < 6; ++b) memset(big[b], b, kLarge);
  }
  for (int i = 0; i < 30; ++i) {
    char* scratch = malloc(64 * 1024); /* SCRATCH */
    memset(scratch, i, 64 * 1024);
    struct node* n = malloc(sizeof *n); /* KEEP */
    n->next = kept;
    kept = n;
    if (!leaky) {
      kept = n->next;
      free(n);
    }
    free(scratch);
    tleak_mark_iteration();
    if (i == 9) tleak_snapshot("early");
    if (i == 19) tleak_snapshot("late");
  }
  while (kept) {
    struct node* next = kept->next;
    free(kept);
    kept = next;
  }
  for (int b = 0; b < 6; ++b) free(big[b]);
  printf("growth %s done\n", leaky ? "leaky" : "fixed");
  return 0;
}
