/* Built twice, with FRAME_WORDS 2 and 12: two plugins whose plugin_make has the same code, at the
 * same offsets, but a frame of another size (its CFA is rsp + 32 in one, rsp + 112 in the other).
 * plugin_swap.c loads them in turn at the same address. */
#include <stdlib.h>

__attribute__((noipa)) void plugin_fill(volatile long* words, int n) {
  for (int i = 0; i < n; ++i) words[i] = i;
}

void* plugin_make(size_t size) {
  volatile long words[FRAME_WORDS];
  plugin_fill(words, FRAME_WORDS);
  char* p = malloc(size); /* SWAPPED */
  return p + words[0];
}
