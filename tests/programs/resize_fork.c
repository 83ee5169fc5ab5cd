/* realloc chains, aligned allocations and a fork whose child allocates.
 *   REALLOC: a buffer grown by realloc 100 times to 100,000 B, then freed: nothing left.
 *   REALLOCARRAY: an int array grown by reallocarray 50 times to 50 x 100 ints, then freed; one
 *            call whose count * size overflows fails with ENOMEM and leaves the array as it was.
 *   ALIGNED: posix_memalign(64, 1000), aligned_alloc(4096, 8192), memalign(256, 3000), valloc(5000)
 *            all freed; each reported with its requested size and alignment kept.
 *   CHILD:   the forked child allocates 1 MiB and exits without freeing: not the parent's.
 * Exits with status 7, so tleak's handling of a failing program is seen too. */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
  char* buffer = NULL;
  for (int i = 1; i <= 100; ++i) {
    buffer = realloc(buffer, (size_t)i * 1000); /* REALLOC */
    memset(buffer, i, (size_t)i * 1000);
  }
  free(buffer);

  int* array = NULL;
  for (int i = 1; i <= 50; ++i) {
    array = reallocarray(array, (size_t)i * 100, sizeof(int)); /* REALLOCARRAY */
    array[i * 100 - 1] = i;
  }
  volatile size_t too_many = SIZE_MAX / 2; /* not folded: the compiler would warn of the overflow */
  errno = 0;
  const int overflow_refused = reallocarray(array, too_many, sizeof(int)) == NULL && errno == ENOMEM &&
                               array[4999] == 50;
  free(array);

  void* a = NULL;
  if (posix_memalign(&a, 64, 1000) != 0) return 1; /* ALIGNED */
  void* b = aligned_alloc(4096, 8192);
  void* c = memalign(256, 3000);
  void* d = valloc(5000);
  const int aligned = ((uintptr_t)a % 64 == 0) && ((uintptr_t)b % 4096 == 0) &&
                      ((uintptr_t)c % 256 == 0) && ((uintptr_t)d % 4096 == 0);
  free(a);
  free(b);
  free(c);
  free(d);

  fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    char* volatile big = malloc(1 << 20); /* CHILD */
    memset(big, 1, 1 << 20);
    printf("child allocated\n");
    exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  printf("aligned %s, overflow %s, child exit %d\n", aligned ? "ok" : "WRONG", overflow_refused ? "refused" : "WRONG",
         WEXITSTATUS(status));
  return 7;
}
