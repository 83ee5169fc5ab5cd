/* Loads a C++ plugin RTLD_LOCAL (argv[1], local_cxx_plugin.cc), as Python loads C++ extensions,
 * and has it allocate with operator new. Then asks dlerror(): nothing happened since the last
 * call, so it must say so, with or without tleak (a lookup the agent made must not show). With
 * "pending" (argv[2]), a dlopen fails just before the plugin's first operator new, and dlerror()
 * must still give its message afterwards.
 * Expected: "rows 30, dlerror: none" ("rows 30, dlerror: kept" when pending); the rows' site in the
 * plugin; no frame of the agent's. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const int pending = argc > 2 && strcmp(argv[2], "pending") == 0;
  void* plugin = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (plugin == NULL) return 3;
  int (*make_rows)(int) = (int (*)(int))dlsym(plugin, "make_rows");
  if (make_rows == NULL) return 4;
  (void)dlerror();
  if (pending && dlopen("libtleak-test-no-such-library.so", RTLD_NOW) != NULL) return 5;
  const int rows = make_rows(30);
  const char* error = dlerror();
  const char* said = error == NULL ? "none" : strstr(error, "libtleak-test-no-such-library.so") != NULL ? "kept" : error;
  printf("rows %d, dlerror: %s\n", rows, said);
  return 0;
}
