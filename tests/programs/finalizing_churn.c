/* A C library a Python daemon thread calls through ctypes (so without the GIL) and never returns
 * from: it allocates and frees without end, and once the interpreter is finalizing
 * (_Py_IsFinalizing, looked up in the process), from another line. By then the interpreter frees
 * every other thread's state (_PyThreadState_DeleteExcept) while this thread still allocates: tleak
 * must not read that state. Used by tests/programs/python_lib/finalizing_daemon.py.
 * Expected: allocations at the FINALIZING line, with no Python frame. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>

void churn(void) {
  int (*finalizing)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "_Py_IsFinalizing");
  for (;;) {
    if (finalizing != NULL && finalizing()) {
      free(malloc(777)); /* FINALIZING */
    } else {
      free(malloc(100)); /* RUNNING */
    }
  }
}
