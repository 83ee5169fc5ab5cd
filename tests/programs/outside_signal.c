/* A program ended by a signal from outside that it leaves to the default action: Ctrl-C's SIGINT,
 * SIGTERM (kill, timeout), SIGPIPE (its reader went away).
 *   "waiting"  the main thread waits in pause(); another thread, every signal blocked, sends the
 *              process SIGTERM (by the system call: no kill() of the program's own)
 *   "busy"     the main thread allocates and frees in a loop when SIGINT comes the same way (it may
 *              land inside malloc)
 *   "twice"    two threads wait; SIGTERM is sent twice, a moment apart
 *   "pipe"     the main thread writes into a pipe whose reader has closed it: SIGPIPE
 *   "deep"     SIGTERM finds a thread waiting at the end of a recursion that left 6 KiB of its
 *              64 KiB stack (enough for the kernel's signal frame; the agent's scan must not take
 *              the rest and overflow it)
 * Before the signal:
 *   lost:       lost_node.h's node and its child: 168 B in 2 blocks
 *   reachable:  1000 B from a global (KEPT), 2000 B from main's own frame (ON_STACK)
 * Expected under tleak and memcheck alike: killed by the signal, 168 B lost.
 *   "view"     what the program reads of its signals' actions, as without tleak: the default ones,
 *              SIG_IGN, a handler of its own, through sigaction, signal, sysv_signal and sigset; a
 *              child it forks and that sends itself SIGTERM is killed by it. Prints what it read;
 *              exits 0. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "deep_stack.h"
#include "lost_node.h"

static char* kept;
static volatile sig_atomic_t handled;

/* Sends the process `signal` `times` times, `gap_us` apart, once `delay_us` have passed, by the
 * system call, from a thread that blocks every signal: the kernel gives it to another thread, as
 * it gives a signal from another process. */
struct sender {
  int signal, times, delay_us, gap_us;
};

static void* send_signal(void* argument) {
  const struct sender* s = argument;
  usleep(s->delay_us);
  for (int i = 0; i < s->times; ++i) {
    if (i > 0) usleep(s->gap_us);
    syscall(SYS_kill, getpid(), s->signal);
  }
  return NULL;
}

static void start_sender(struct sender* s) {
  sigset_t every, before;
  sigfillset(&every);
  pthread_sigmask(SIG_BLOCK, &every, &before);
  pthread_t thread;
  pthread_create(&thread, NULL, send_signal, s);
  pthread_sigmask(SIG_SETMASK, &before, NULL);
}

static void* wait_forever(void* unused) {
  (void)unused;
  for (;;) pause();
  return NULL;
}

static void wait_there(void) {
  for (;;) pause();
}

static void on_signal(int signal) {
  (void)signal;
  ++handled;
}

static const char* name_of(void (*handler)(int)) {
  if (handler == SIG_DFL) return "SIG_DFL";
  if (handler == SIG_IGN) return "SIG_IGN";
  if (handler == SIG_HOLD) return "SIG_HOLD";
  if (handler == SIG_ERR) return "SIG_ERR";
  if (handler == on_signal) return "on_signal";
  return "another";
}

static void (*action_of(int signal))(int) {
  struct sigaction now;
  sigaction(signal, NULL, &now);
  return now.sa_handler;
}

static int view(void) {
  struct sigaction old;
  memset(&old, 0xff, sizeof old);
  sigaction(SIGINT, NULL, &old);
  printf("SIGINT %s flags %d\n", name_of(old.sa_handler), old.sa_flags);
  printf("signal(SIGHUP, SIG_IGN) was %s\n", name_of(signal(SIGHUP, SIG_IGN)));
  printf("SIGHUP now %s\n", name_of(action_of(SIGHUP)));
  syscall(SYS_kill, getpid(), SIGHUP); /* ignored */
  printf("signal(SIGHUP, SIG_DFL) was %s\n", name_of(signal(SIGHUP, SIG_DFL)));
  struct sigaction mine;
  memset(&mine, 0, sizeof mine);
  mine.sa_handler = on_signal;
  mine.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &mine, &old);
  printf("SIGTERM was %s\n", name_of(old.sa_handler));
  syscall(SYS_kill, getpid(), SIGTERM); /* handled */
  struct sigaction back;
  memset(&back, 0, sizeof back);
  back.sa_handler = SIG_DFL;
  sigaction(SIGTERM, &back, &old);
  printf("handled %d; SIGTERM was %s flags %d, now %s\n", (int)handled, name_of(old.sa_handler),
         old.sa_flags & SA_RESTART, name_of(action_of(SIGTERM)));
  printf("sigset(SIGPIPE, SIG_HOLD) was %s\n", name_of(sigset(SIGPIPE, SIG_HOLD)));
  printf("sigset(SIGPIPE, SIG_DFL) was %s\n", name_of(sigset(SIGPIPE, SIG_DFL)));
  printf("sysv_signal(SIGINT, on_signal) was %s\n", name_of(sysv_signal(SIGINT, on_signal)));
  printf("signal(SIGINT, SIG_DFL) was %s\n", name_of(signal(SIGINT, SIG_DFL)));
  fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    syscall(SYS_kill, getpid(), SIGTERM);
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  printf("child %s %d\n", WIFSIGNALED(status) ? "killed by" : "exited", WIFSIGNALED(status) ? WTERMSIG(status)
                                                                                                 : WEXITSTATUS(status));
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  if (strcmp(argv[1], "view") == 0) return view();
  kept = malloc(1000); /* KEPT */
  memset(kept, 1, 1000);
  char* volatile on_stack = malloc(2000); /* ON_STACK */
  memset(on_stack, 3, 2000);
  lose_node();
  scrub_stack();
  if (strcmp(argv[1], "waiting") == 0) {
    struct sender s = {SIGTERM, 1, 20000, 0};
    start_sender(&s);
    for (;;) pause();
  }
  if (strcmp(argv[1], "busy") == 0) {
    struct sender s = {SIGINT, 1, 50000, 0};
    start_sender(&s);
    for (unsigned i = 0;; ++i) {
      char* volatile block = malloc(16 + i % 4000);
      block[0] = 1;
      free(block);
    }
  }
  if (strcmp(argv[1], "twice") == 0) {
    pthread_t waiter;
    pthread_create(&waiter, NULL, wait_forever, NULL);
    struct sender s = {SIGTERM, 2, 20000, 1000};
    start_sender(&s);
    for (;;) pause();
  }
  if (strcmp(argv[1], "deep") == 0) {
    start_deep_thread(wait_there);
    struct sender s = {SIGTERM, 1, 50000, 0};
    start_sender(&s);
    sigset_t every;
    sigfillset(&every);
    pthread_sigmask(SIG_BLOCK, &every, NULL); /* the deep thread takes the signal */
    for (;;) pause();
  }
  if (strcmp(argv[1], "pipe") == 0) {
    int ends[2];
    if (pipe(ends) != 0) return 2;
    close(ends[0]);
    for (;;) write(ends[1], "x", 1);
  }
  return 2;
}
