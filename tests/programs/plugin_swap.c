/* Loads two plugins in turn (argv[1], argv[2]: frame_plugin.c built twice), each once unloaded
 * before the other is loaded, so that the loader maps them at the same address: the same return
 * address in plugin_make then has another frame rule in each. The agent's walk keeps a rule per
 * return address (agent/src/fast_unwind.h) and must forget it when its object is unloaded.
 * Prints whether every load put plugin_make at one address (else the run proves nothing).
 * With "signal" (argv[3]), plugin_make is called from a signal handler the program raises: the
 * kernel's signal frame on the stack makes the agent hand the whole stack to libunwind, whose own
 * cache of frames must not outlive the unload either.
 * Expected: one site of 20 allocations of 100 B, all kept, at plugin_make called by main (or by
 * on_signal): libunwind, whose cache outlived the unload, gave half of them no caller. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

static void* kept[20];
static void* (*make)(size_t);
static int next;

static void on_signal(int signal) {
  (void)signal;
  kept[next] = make(100);
}

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  const int from_handler = argc > 3 && strcmp(argv[3], "signal") == 0;
  if (from_handler) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_signal;
    sigaction(SIGUSR1, &action, NULL);
  }
  void* first_address = NULL;
  int one_address = 1;
  for (int i = 0; i < 20; ++i) {
    void* plugin = dlopen(argv[1 + i % 2], RTLD_NOW | RTLD_LOCAL);
    if (plugin == NULL) {
      fprintf(stderr, "%s\n", dlerror());
      return 1;
    }
    make = (void* (*)(size_t))dlsym(plugin, "plugin_make");
    if (first_address == NULL) first_address = (void*)make;
    one_address &= (void*)make == first_address;
    next = i;
    if (from_handler) {
      raise(SIGUSR1);
    } else {
      kept[i] = make(100);
    }
    dlclose(plugin);
  }
  printf("plugins %s\n", one_address ? "at one address" : "moved");
  return 0;
}
