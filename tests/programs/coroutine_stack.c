/* A coroutine on a small stack of the program's own (makecontext, argv[1] bytes, 4,096 by default)
 * allocates 1,000 blocks of 32-1,031 B (CORO), handing control back every 100; the thread that
 * started it frees them all. Plain, its allocations fit in that stack; under tleak they must too:
 * the agent cannot know how much such a stack has left, and libunwind's walk (with its lazy
 * binding's save of the register state) overflowed one of 7 KiB. With "thread" (argv[2]) it all
 * runs on a new thread, whose first allocation is the coroutine's. Prints "1000 blocks, 11
 * switches". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

static ucontext_t main_context, coroutine_context;
static void* blocks[1000];

static void coroutine(void) {
  for (int i = 0; i < 1000; ++i) {
    blocks[i] = malloc(32 + (size_t)i); /* CORO */
    if (i % 100 == 0) swapcontext(&coroutine_context, &main_context);
  }
}

static long size = 4096;
static char* stack;

static void* run(void* unused) {
  (void)unused;
  if (getcontext(&coroutine_context) != 0) return (void*)1;
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
  printf("%d blocks, %d switches\n", count, switches);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc > 1) size = atol(argv[1]);
  if (size < 1024 || size > (1 << 20)) return 2;
  const int on_thread = argc > 2 && strcmp(argv[2], "thread") == 0;
  stack = malloc((size_t)size);
  if (stack == NULL) return 1;
  void* result = NULL;
  if (on_thread) {
    pthread_t thread;
    if (pthread_create(&thread, NULL, run, NULL) != 0 || pthread_join(thread, &result) != 0) return 1;
  } else {
    result = run(NULL);
  }
  free(stack);
  return result == NULL ? 0 : 1;
}
