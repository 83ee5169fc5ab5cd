/* The main thread allocates and frees without pause; a timer's signal handler calls exit(), so the
 * exit handlers may run on top of an interrupted malloc (inside the agent, its lock held).
 * Expected: exits 0 every time, never hangs. */
#include <signal.h>
#include <stdlib.h>
#include <sys/time.h>

static void on_alarm(int signal) {
  (void)signal;
  exit(0);
}

int main(void) {
  signal(SIGALRM, on_alarm);
  const struct itimerval timer = {{0, 0}, {0, 50000}};
  setitimer(ITIMER_REAL, &timer, NULL);
  for (;;) {
    void* volatile p = malloc(64);
    free(p);
  }
}
