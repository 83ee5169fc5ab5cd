/* Forks 50 times while 4 threads allocate and free without pause, so a fork can land while another
 * thread is inside the agent holding its locks. Each child allocates, frees and exits 0; the
 * parent checks every child's status. Expected: no child hangs, every child exits 0. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static atomic_int stop;

static void* churn(void* arg) {
  (void)arg;
  while (!atomic_load(&stop)) {
    void* p = malloc(64 + (size_t)(rand() % 4096));
    free(p);
  }
  return NULL;
}

int main(void) {
  pthread_t threads[4];
  for (int i = 0; i < 4; ++i) pthread_create(&threads[i], NULL, churn, NULL);
  int ok = 0;
  for (int i = 0; i < 50; ++i) {
    const pid_t child = fork();
    if (child == 0) {
      for (int k = 0; k < 1000; ++k) free(malloc(128));
      _exit(0);
    }
    int status = 1;
    waitpid(child, &status, 0);
    ok += WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < 4; ++i) pthread_join(threads[i], NULL);
  printf("children ok: %d of 50\n", ok);
  return ok == 50 ? 0 : 1;
}
