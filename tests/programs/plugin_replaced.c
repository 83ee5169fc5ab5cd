/* A program whose plugin file is replaced by another build while it runs (a rebuild during a long
 * job): it loads PLUGIN (argv[1]), loses a block its plugin_make allocates, then renames REPLACEMENT
 * (argv[2]) over PLUGIN and exits. The file tleak reads after the run is no longer the one the
 * process ran: the plugin's frames are named by their place in it, and a note says why.
 *   directly lost: 700 B (LOST, allocated in the plugin) */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  void* plugin = dlopen(argv[1], RTLD_NOW);
  if (plugin == NULL) return 1;
  void* (*make)(size_t) = (void* (*)(size_t))dlsym(plugin, "plugin_make");
  if (make == NULL) return 1;
  void* volatile lost = make(700); /* LOST */
  lost = NULL;
  if (rename(argv[2], argv[1]) != 0) return 1;
  printf("replaced\n");
  return 0;
}
