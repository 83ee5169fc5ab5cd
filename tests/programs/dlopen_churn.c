/* Loads a plugin (argv[1]), calls it to allocate, and unloads it, 100 times, while counting what
 * dl_iterate_phdr reports before and after each load: the agent answers libunwind's searches of
 * the loaded objects from a list of its own (unwinder_objects.h), which must follow every load and
 * unload, and the program's own calls must see exactly what they would without tleak.
 * Expected: the PLUGIN site has 100 allocations of 1000 B, all kept (in `kept`, reachable at
 * exit); the program prints the same counts with and without tleak. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>

static void* kept[100];

static int count_object(struct dl_phdr_info* info, size_t size, void* count) {
  (void)info;
  (void)size;
  ++*(int*)count;
  return 0;
}

static int loaded_objects(void) {
  int count = 0;
  dl_iterate_phdr(count_object, &count);
  return count;
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const int before = loaded_objects();
  int during_ok = 1, after_ok = 1;
  for (int i = 0; i < 100; ++i) {
    void* plugin = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (plugin == NULL) {
      fprintf(stderr, "%s\n", dlerror());
      return 1;
    }
    void* (*make)(size_t) = (void* (*)(size_t))dlsym(plugin, "plugin_make");
    kept[i] = make(1000);
    during_ok &= loaded_objects() == before + 1;
    dlclose(plugin);
    after_ok &= loaded_objects() == before;
  }
  printf("objects %s while loaded, %s after\n", during_ok ? "one more" : "WRONG", after_ok ? "as before" : "WRONG");
  return 0;
}
