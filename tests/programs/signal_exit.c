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
 *   lost:       a 123 B node (LOST) and the 45 B child only it pointed to (CHILD): 168 B in 2 blocks
 *   reachable:  1000 B from a global (KEPT), 2000 B from main's own frame (ON_STACK)
 * After a signal that let it go on ("handled", "blocked"): KEPT freed and a 77 B block lost (AFTER).
 * Expected under tleak and memcheck alike: 168 B lost, or 245 B when the program went on. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char* kept;

/* Separate functions, so no pointer to a lost block survives in main's frame or registers. */
__attribute__((noinline)) static void lose_node(void) {
  char** volatile node = malloc(123); /* LOST */
  memset(node, 0, 123);
  node[0] = malloc(45); /* CHILD */
  memset(node[0], 2, 45);
}

__attribute__((noinline)) static void lose_after(void) {
  char* volatile after = malloc(77); /* AFTER */
  memset(after, 4, 77);
}

__attribute__((noinline)) static void scrub_stack(void) {
  volatile char junk[16384];
  memset((char*)junk, 0, sizeof junk);
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
