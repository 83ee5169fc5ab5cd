/* THREADS threads (argv[1], default 100) each allocate a block and wait in read() on a pipe nothing
 * writes to, as the program exits: what tleak's exit scan spends stopping each of the program's
 * other threads to read its registers ("other threads' registers read" in the profile build's end
 * profile, core/diagnosis/src/end_profile.h). */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

static int pipe_fds[2];

static void* wait_in_read(void* unused) {
  (void)unused;
  char* volatile block = malloc(64);
  char byte;
  if (read(pipe_fds[0], &byte, 1) < 0) return NULL;
  return block;
}

int main(int argc, char** argv) {
  const int threads = argc > 1 ? atoi(argv[1]) : 100;
  if (threads < 1 || threads > 10000 || pipe(pipe_fds) != 0) return 2;
  pthread_attr_t small;
  pthread_attr_init(&small);
  pthread_attr_setstacksize(&small, 64 * 1024);
  for (int i = 0; i < threads; ++i) {
    pthread_t t;
    if (pthread_create(&t, &small, wait_in_read, NULL) != 0) return 1;
  }
  usleep(200000); /* each thread into its read */
  return 0;
}
