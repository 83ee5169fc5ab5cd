/* A coroutine on a small stack of the program's own (makecontext, argv[1] bytes, 4,096 by default)
 * allocates 1,000 blocks of 32-1,031 B (CORO), handing control back every 100; the main thread
 * frees them all. Plain, its allocations fit in that stack; under tleak they must too: the agent
 * cannot know how much such a stack has left, and libunwind's walk (with its lazy binding's save of
 * the register state) overflowed one of 7 KiB. Prints "1000 blocks, 11 switches". */
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

static ucontext_t main_context, coroutine_context;
static void* blocks[1000];

static void coroutine(void) {
  for (int i = 0; i < 1000; ++i) {
    blocks[i] = malloc(32 + (size_t)i); /* CORO */
    if (i % 100 == 0) swapcontext(&coroutine_context, &main_context);
  }
}

int main(int argc, char** argv) {
  const long size = argc > 1 ? atol(argv[1]) : 4096;
  if (size < 1024 || size > (1 << 20)) return 2;
  char* stack = malloc((size_t)size);
  if (stack == NULL || getcontext(&coroutine_context) != 0) return 1;
  coroutine_context.uc_stack.ss_sp = stack;
  coroutine_context.uc_stack.ss_size = (size_t)size;
  coroutine_context.uc_link = &main_context;
  makecontext(&coroutine_context, coroutine, 0);
  int switches = 0;
  while (swapcontext(&main_context, &coroutine_context) == 0 && ++switches < 11) {
  }
  int count = 0;
  for (int i = 0; i < 1000; ++i) {
    count += blocks[i] != NULL;
    free(blocks[i]);
  }
  free(stack);
  printf("%d blocks, %d switches\n", count, switches);
  return 0;
}
