/* Loads a library with RTLD_DEEPBIND (argv[1]: "now" or "lazy" binding; "plain": without
 * RTLD_DEEPBIND; "fork": bound now, then the rest done in a forked child) from argv[2], a path or a bare name the loader searches for, and hands blocks back
 * and forth with it: blocks of the program's freed in the library, the library's freed in the
 * program, one resized there. One block the library made is lost. Expected under tleak, where it
 * binds the library's calls to its own: the lost block (LOST, 1,234 B) is the only leak, as memcheck
 * says; every block of HANDED was freed. Built in two forms: without a RUNPATH, and with one of
 * $ORIGIN (deep_bound_runpath), through which the loader finds a library named bare only for this
 * program as the caller. Prints "done". */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  const int binding = strcmp(argv[1], "lazy") == 0 ? RTLD_LAZY : RTLD_NOW;
  const int deep = strcmp(argv[1], "plain") == 0 ? 0 : RTLD_DEEPBIND;
  void* library = dlopen(argv[2], binding | deep);
  if (library == NULL) {
    fprintf(stderr, "%s\n", dlerror());
    return 1;
  }
  /* A dlopen that succeeded leaves no error to read, whatever tleak asked the loader after it. */
  if (dlerror() != NULL) return 3;
  void* (*make)(size_t) = (void* (*)(size_t))dlsym(library, "plugin_make");
  void* (*zeroed)(size_t) = (void* (*)(size_t))dlsym(library, "plugin_zeroed");
  void* (*grow)(void*, size_t) = (void* (*)(void*, size_t))dlsym(library, "plugin_grow");
  void (*drop)(void*) = (void (*)(void*))dlsym(library, "plugin_drop");
  if (make == NULL || zeroed == NULL || grow == NULL || drop == NULL) return 1;
  if (strcmp(argv[1], "fork") == 0) {
    const pid_t child = fork();
    if (child < 0) return 1;
    if (child > 0) {
      int status = 0;
      return waitpid(child, &status, 0) == child && WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    }
  }
  for (int i = 0; i < 50; ++i) {
    drop(malloc(777)); /* HANDED */
    free(make(100));
    free(grow(zeroed(200), 2000));
  }
  void* lost = make(1234); /* LOST */
  lost = NULL;
  puts("done");
  return 0;
}
