/* Allocations whose stacks the agent hands to libunwind: ROUNDS (argv[2], default 20,000) signals
 * the program raises at itself, each handler making 10 allocate/free pairs 10 frames deep, below
 * the kernel's signal frame. With an object to load (argv[1], not "-"), it is loaded and unloaded
 * first: from then on libunwind's walks go by unw_step (agent/src/libunwind_walk.h). Prints the
 * time per allocation, raise() and the handler's entry included. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double seconds(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

__attribute__((noinline)) static void* nest(int depth) {
  void* block = depth == 0 ? malloc(64) : nest(depth - 1);
  __asm__ volatile("" ::: "memory"); /* keeps each level a real frame */
  return block;
}

static void on_signal(int signal) {
  (void)signal;
  for (int i = 0; i < 10; ++i) free(nest(8));
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "-") != 0) {
    void* object = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (object == NULL) {
      fprintf(stderr, "%s\n", dlerror());
      return 2;
    }
    dlclose(object);
  }
  const long rounds = argc > 2 ? atol(argv[2]) : 20000;
  if (rounds < 1) return 2;
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = on_signal;
  sigaction(SIGUSR1, &action, NULL);
  const double start = seconds();
  for (long i = 0; i < rounds; ++i) raise(SIGUSR1);
  printf("%.0f ns per allocation\n", (seconds() - start) / (double)(rounds * 10) * 1e9);
  return 0;
}
