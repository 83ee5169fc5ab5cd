/* A signal handler that allocates on a small alternate signal stack: argv[1] bytes of it (default
 * 8 KiB, the classic SIGSTKSZ; the kernel's signal frame takes about 3.3 KiB of it here, with
 * AVX-512 state), SIGUSR1 raised ten times, each handler's call allocating 100 bytes (line ALT) and freeing
 * them; then one allocation on the main thread's own stack (line MAIN). Plain it runs from about
 * 6,000 bytes here (under tleak now from about 6,500); under tleak the agent's walk of the handler's stack (5-6 KiB where its return
 * addresses are new to libunwind) overflowed an 8 KiB one into the heap below it, and glibc
 * aborted the program. A failed dlsym before sigaltstack leaves a dlerror() message pending, which
 * must still be there after it (the agent interposes sigaltstack; its lookup of the next
 * definition, with dlsym at that first call, had cleared it). Expected: "ok 10, dlerror set",
 * exit 0. */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile int handled;

__attribute__((noinline)) static void allocate_in_handler(void) {
  char* volatile p = malloc(100); /* ALT */
  p[0] = 1;
  free(p);
}

static void handler(int signal_number) {
  (void)signal_number;
  allocate_in_handler();
  ++handled;
}

int main(int argc, char** argv) {
  const size_t size = argc > 1 ? strtoul(argv[1], NULL, 0) : 8 * 1024;
  stack_t alternate = {.ss_sp = malloc(size), .ss_size = size, .ss_flags = 0};
  (void)dlsym(RTLD_DEFAULT, "tleak_test_symbol_no_object_defines");
  if (alternate.ss_sp == NULL || sigaltstack(&alternate, NULL) != 0) return 1;
  const int dlerror_pending = dlerror() != NULL;
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = handler;
  action.sa_flags = SA_ONSTACK;
  if (sigaction(SIGUSR1, &action, NULL) != 0) return 1;
  for (int i = 0; i < 10; ++i) raise(SIGUSR1);
  char* volatile p = malloc(200); /* MAIN */
  p[0] = 1;
  free(p);
  printf("ok %d, dlerror %s\n", handled, dlerror_pending ? "set" : "cleared");
  return 0;
}
