/* Loads two plugins in turn (argv[1], argv[2]: frame_plugin.c built twice), each once unloaded
 * before the other is loaded, so that the loader maps them at the same address: the same return
 * address in plugin_make then has another frame rule in each. The agent's walk keeps a rule per
 * return address (agent/src/fast_unwind.h) and must forget it when its object is unloaded.
 * Prints whether every load put plugin_make at one address (else the run proves nothing).
 * Expected: one site of 20 allocations of 100 B, all kept, at plugin_make called by main:
 * libunwind, whose cache outlives the unload, gave half of them no caller. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

static void* kept[20];

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  void* first_address = NULL;
  int one_address = 1;
  for (int i = 0; i < 20; ++i) {
    void* plugin = dlopen(argv[1 + i % 2], RTLD_NOW | RTLD_LOCAL);
    if (plugin == NULL) {
      fprintf(stderr, "%s\n", dlerror());
      return 1;
    }
    void* (*make)(size_t) = (void* (*)(size_t))dlsym(plugin, "plugin_make");
    if (first_address == NULL) first_address = (void*)make;
    one_address &= (void*)make == first_address;
    kept[i] = make(100);
    dlclose(plugin);
  }
  printf("plugins %s\n", one_address ? "at one address" : "moved");
  return 0;
}
