/* Ends itself with a signal after its own cleanup, as CPython does after an unhandled
 * KeyboardInterrupt (it finalizes, then sends itself SIGINT with the default action) and as C
 * programs that re-raise a signal they caught do. argv[1]:
 *   "kill"       kill(getpid(), SIGTERM), default action: killed by SIGTERM
 *   "raise"      raise(SIGINT), default action: killed by SIGINT
 *   "handled"    kill(getpid(), SIGTERM) with a handler: the program goes on, then returns 0
 *   "blocked"    raise(SIGTERM) while SIGTERM is blocked: it stays pending, the program returns 0
 *   "in_handler" a SIGUSR1 handler, interrupting the program, re-raises SIGTERM with the default
 *                action: killed by SIGTERM from inside a handler (which may have interrupted malloc)
 * Before the signal:
 *   lost:       lost_node.h's node and its child: 168 B in 2 blocks
 *   reachable:  1000 B from a global (KEPT), 2000 B from main's own frame (ON_STACK)
 * After a signal that let it go on ("handled", "blocked"): KEPT freed and a 77 B block lost (AFTER);
 * main returns, and ON_STACK, its frame gone, is lost too.
 * Expected under tleak and memcheck alike: 168 B lost, or 2,245 B when the program went on. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lost_node.h"

static char* kept;

__attribute__((noinline)) static void lose_after(void) {
  char* volatile after = malloc(77); /* AFTER */
  memset(after, 4, 77);
}

static void note_signal(int signal) { (void)signal; }

static void reraise_default(int signal) {
  (void)signal;
  struct sigaction fallback;
  memset(&fallback, 0, sizeof fallback);
  fallback.sa_handler = SIG_DFL;
  sigaction(SIGTERM, &fallback, NULL);
  kill(getpid(), SIGTERM);
}

static void handle(int signal, void (*handler)(int)) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = handler;
  sigaction(signal, &action, NULL);
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  kept = malloc(1000); /* KEPT */
  memset(kept, 1, 1000);
  char* volatile on_stack = malloc(2000); /* ON_STACK */
  memset(on_stack, 3, 2000);
  lose_node();
  scrub_stack();
  if (strcmp(argv[1], "kill") == 0) kill(getpid(), SIGTERM);
  if (strcmp(argv[1], "raise") == 0) raise(SIGINT);
  if (strcmp(argv[1], "in_handler") == 0) {
    handle(SIGUSR1, reraise_default);
    raise(SIGUSR1);
  }
  if (strcmp(argv[1], "handled") == 0) {
    handle(SIGTERM, note_signal);
    kill(getpid(), SIGTERM);
  }
  if (strcmp(argv[1], "blocked") == 0) {
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    sigprocmask(SIG_BLOCK, &term, NULL);
    raise(SIGTERM);
  }
  if (strcmp(argv[1], "handled") != 0 && strcmp(argv[1], "blocked") != 0) return 2;
  free(kept);
  kept = NULL;
  lose_after();
  scrub_stack();
  return 0;
}
