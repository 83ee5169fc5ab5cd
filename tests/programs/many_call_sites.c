/* Allocations from SITES distinct call sites (argv[1], at most 4096), taken in turn for ROUNDS
 * rounds (argv[2]): more stacks than a thread's cache of stacks holds (agent::kStackSlots, 1,024),
 * so the agent forgets a stack before it comes round again and sends it again. Each block is freed
 * at once. Expected: one site per call site, at line ALLOC, with ROUNDS allocations each.
 * Timed in docs/performance-history.md ("Since caaadc5"): many_call_sites 4096 500 under two builds of tleak. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static void* leaf(size_t size) {
  return malloc(size); /* ALLOC */
}

/* Case n calls leaf from a call site of its own (built without optimization: none merged). */
#define SITE(n) \
  case n:       \
    p = leaf(size); \
    break;
#define S4(n) SITE(n) SITE(n + 1) SITE(n + 2) SITE(n + 3)
#define S16(n) S4(n) S4(n + 4) S4(n + 8) S4(n + 12)
#define S64(n) S16(n) S16(n + 16) S16(n + 32) S16(n + 48)
#define S256(n) S64(n) S64(n + 64) S64(n + 128) S64(n + 192)
#define S1024(n) S256(n) S256(n + 256) S256(n + 512) S256(n + 768)

__attribute__((noinline)) static void* from_site(int k, size_t size) {
  void* p = NULL;
  switch (k) {
    S1024(0)
    S1024(1024)
    S1024(2048)
    S1024(3072)
  }
  return p;
}

int main(int argc, char** argv) {
  const int sites = argc > 1 ? atoi(argv[1]) : 4096;
  const long rounds = argc > 2 ? atol(argv[2]) : 3;
  if (sites < 1 || sites > 4096 || rounds < 1) return 2;
  for (long r = 0; r < rounds; ++r) {
    for (int k = 0; k < sites; ++k) free(from_site(k, 16 + (size_t)(k % 64) * 8));
  }
  printf("%d sites, %ld rounds\n", sites, rounds);
  return 0;
}
