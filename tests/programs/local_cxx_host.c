/* Loads a C++ plugin RTLD_LOCAL (argv[1], local_cxx_plugin.cc), as Python loads C++ extensions,
 * and has it allocate with operator new. Then asks dlerror(): nothing happened since the last
 * call, so it must say so, with or without tleak (a lookup the agent made must not show).
 * Expected: "rows 30, dlerror: none"; the rows' site in the plugin; no frame of the agent's. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  void* plugin = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (plugin == NULL) return 3;
  int (*make_rows)(int) = (int (*)(int))dlsym(plugin, "make_rows");
  if (make_rows == NULL) return 4;
  (void)dlerror();
  const int rows = make_rows(30);
  const char* error = dlerror();
  printf("rows %d, dlerror: %s\n", rows, error != NULL ? error : "none");
  return 0;
}
