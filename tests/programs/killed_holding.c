/* Ends without sending its last records: its agent's buffers are not flushed, and what they held is
 * read from the message slots it shared with tleak. Two threads keep 400 blocks of 100 B each and
 * wait; the main thread keeps 200 (HELD); then the process ends as argv[1] says: "kill" (SIGKILL to
 * itself by the system call, as a kill from outside: the C library's kill, which the agent
 * interposes, would have it scanned first) or "exit_group" (the system call itself, past the C library's _exit and the agent's exit
 * scan before it). Nothing is freed: 1,000 blocks, 100,000 B held at the end, none of them judged
 * (no exit scan). */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int holding;
static void* volatile sink;

__attribute__((noinline)) static void hold(int blocks) {
  for (int i = 0; i < blocks; ++i) sink = malloc(100); /* HELD */
}

static void* thread_main(void* arg) {
  (void)arg;
  hold(400);
  pthread_mutex_lock(&lock);
  ++holding;
  pthread_cond_broadcast(&changed);
  for (;;) pthread_cond_wait(&changed, &lock);  /* until the process ends */
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 2 || (strcmp(argv[1], "kill") != 0 && strcmp(argv[1], "exit_group") != 0)) return 2;
  pthread_t threads[2];
  for (int i = 0; i < 2; ++i) pthread_create(&threads[i], NULL, thread_main, NULL);
  pthread_mutex_lock(&lock);
  while (holding < 2) pthread_cond_wait(&changed, &lock);
  pthread_mutex_unlock(&lock);
  hold(200);
  if (strcmp(argv[1], "kill") == 0) syscall(SYS_kill, getpid(), SIGKILL);
  syscall(SYS_exit_group, 0);
  return 0;
}
