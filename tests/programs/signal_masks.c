/* The program's own signal masks under the agent, which answers libunwind's sigprocmask calls
 * itself while it captures a stack: the program's calls must keep their meaning exactly, also
 * from a signal handler that interrupts a capture. A timer fires every 200 us while the main
 * thread allocates from several call sites; each handler checks the masks it sets and reads.
 * Expected: prints "signal masks ok" and exits 0, with or without tleak. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>

static volatile sig_atomic_t failures = 0;
static volatile sig_atomic_t usr1_seen = 0;
static volatile sig_atomic_t alarms = 0;

static int blocked(int signal) {
  sigset_t now;
  if (sigprocmask(SIG_BLOCK, NULL, &now) != 0) return -1;
  return sigismember(&now, signal);
}

static void on_usr1(int signal) {
  (void)signal;
  usr1_seen = usr1_seen + 1;
}

static void on_alarm(int signal) {
  (void)signal;
  if (blocked(SIGALRM) != 1) failures = failures + 1;  // a handler runs with its signal blocked
  sigset_t usr2, old;
  sigemptyset(&usr2);
  sigaddset(&usr2, SIGUSR2);
  if (sigprocmask(SIG_BLOCK, &usr2, &old) != 0 || sigismember(&old, SIGUSR2)) failures = failures + 1;
  if (blocked(SIGUSR2) != 1) failures = failures + 1;
  if (sigprocmask(SIG_SETMASK, &old, NULL) != 0) failures = failures + 1;
  if (blocked(SIGUSR2) != 0) failures = failures + 1;
  alarms = alarms + 1;
}

/* Distinct call sites, so that the agent's unwinder keeps meeting return addresses it has not
 * seen. */
static void* __attribute__((noinline)) site_a(size_t n) { return malloc(n); }
static void* __attribute__((noinline)) site_b(size_t n) { return calloc(1, n); }
static void* __attribute__((noinline)) site_c(size_t n) { return realloc(NULL, n); }

static int check(int ok, const char* what) {
  if (!ok) fprintf(stderr, "signal_masks: %s\n", what);
  return ok;
}

int main(void) {
  int ok = 1;
  signal(SIGUSR1, on_usr1);
  sigset_t usr1, old;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  ok &= check(sigprocmask(SIG_BLOCK, &usr1, &old) == 0 && !sigismember(&old, SIGUSR1), "block SIGUSR1");
  raise(SIGUSR1);
  sigset_t pending;
  sigpending(&pending);
  ok &= check(sigismember(&pending, SIGUSR1) == 1 && usr1_seen == 0, "SIGUSR1 held while blocked");
  errno = 0;
  ok &= check(sigprocmask(12345, &usr1, NULL) == -1 && errno == EINVAL, "an invalid `how` fails with EINVAL");
  ok &= check(sigprocmask(SIG_UNBLOCK, &usr1, NULL) == 0 && usr1_seen == 1, "SIGUSR1 delivered once unblocked");

  signal(SIGALRM, on_alarm);
  const struct itimerval every_200us = {{0, 200}, {0, 200}};
  setitimer(ITIMER_REAL, &every_200us, NULL);
  while (alarms < 1000) {
    void* volatile a = site_a(64);
    void* volatile b = site_b(128);
    void* volatile c = site_c(256);
    free(a);
    free(b);
    free(c);
  }
  const struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
  ok &= check(failures == 0, "a handler's own masks");
  ok &= check(blocked(SIGALRM) == 0 && blocked(SIGUSR2) == 0, "the main thread's mask restored");
  if (!ok) return 1;
  puts("signal masks ok");
  return 0;
}
