/* A program that leaves from deep in a recursion, its thread's stack nearly used up: a thread with
 * a 64 KiB stack recurses until 6 KiB are left, then leaves there by "exit" (exit(0)), "_exit"
 * (_exit(0)), "kill" (kill(getpid(), SIGTERM)) or "abort" (abort()). The agent's walk to the
 * program's frames and its exit scan take more than that: on the program's stack they overflowed
 * it, and the program died of SIGSEGV instead of leaving as it meant to.
 * Expected under tleak and memcheck alike: lost_node.h's 168 B in 2 blocks; exit status 0, or
 * killed by SIGTERM or SIGABRT. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "deep_stack.h"
#include "lost_node.h"

static const char* how;

static void leave(void) {
  if (strcmp(how, "exit") == 0) exit(0);
  if (strcmp(how, "_exit") == 0) _exit(0);
  if (strcmp(how, "kill") == 0) kill(getpid(), SIGTERM);
  if (strcmp(how, "abort") == 0) abort();
  _exit(2);
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  how = argv[1];
  lose_node();
  scrub_stack();
  const pthread_t deep = start_deep_thread(leave);
  pthread_join(deep, NULL);
  return 2;
}
