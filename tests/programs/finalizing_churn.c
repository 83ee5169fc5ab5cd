/* A C library a Python daemon thread calls through ctypes (so without the GIL) and never returns
 * from: it allocates and frees without end, and once the interpreter is finalizing
 * (_Py_IsFinalizing, looked up in the process), from another line. By then the interpreter frees
 * every other thread's state (_PyThreadState_DeleteExcept) while this thread still allocates: tleak
 * must not read that state. The process's exit waits (at most 5 s) until the thread has allocated
 * 1,000 times while finalizing, however busy the machine. Used by
 * tests/programs/python_lib/finalizing_daemon.py.
 * Expected: allocations at the FINALIZING line, with no Python frame. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

static atomic_long finalizing_allocations;

void churn(void) {
  int (*finalizing)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "_Py_IsFinalizing");
  for (;;) {
    if (finalizing != NULL && finalizing()) {
      free(malloc(777)); /* FINALIZING */
      atomic_fetch_add(&finalizing_allocations, 1);
    } else {
      free(malloc(100)); /* RUNNING */
    }
  }
}

static void wait_for_the_thread(void) {
  const struct timespec pause = {0, 1000000};
  for (int waited = 0; waited < 5000 && atomic_load(&finalizing_allocations) < 1000; ++waited) nanosleep(&pause, NULL);
}

/* Registered when Python loads the library, so it runs before the handlers registered earlier
 * (tleak's own among them), once Python has finalized. */
__attribute__((constructor)) static void register_wait(void) { atexit(wait_for_the_thread); }
