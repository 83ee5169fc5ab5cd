/* The main thread allocates and frees without pause; a timer's signal handler calls exit(), or with
 * argv[1] "_exit" _exit(), so the exit handlers, or the agent's scan before _exit, may run on top of
 * an interrupted malloc (inside the agent, its lock held, or inside the C library's).
 * Expected: exits 0 every time, never hangs; after _exit from the handler, no exit scan. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static void on_alarm(int signal) {
  (void)signal;
  exit(0);
}

static void on_alarm_leave(int signal) {
  (void)signal;
  _exit(0);
}

int main(int argc, char** argv) {
  signal(SIGALRM, argc > 1 && strcmp(argv[1], "_exit") == 0 ? on_alarm_leave : on_alarm);
  const struct itimerval timer = {{0, 0}, {0, 50000}};
  setitimer(ITIMER_REAL, &timer, NULL);
  for (;;) {
    void* volatile p = malloc(64);
    free(p);
  }
}
