#include "tleak/diagnosis/interruption.h"

#include <unistd.h>

#include <atomic>
#include <cstring>

namespace tleak::diagnosis {
namespace {

char g_temporary[4096];
std::atomic<bool> g_has_temporary{false};
std::atomic<pid_t> g_child{0};

// A leftover's slot: free, being written (not yet to be removed), a file or a directory.
enum Leftover : int { kFree = 0, kWriting = 1, kFile = 2, kDirectory = 3 };
char g_leftover_paths[kMaxLeftovers][4096];
std::atomic<int> g_leftover_kinds[kMaxLeftovers];

}  // namespace

void set_temporary_file(const char* path) {
  g_has_temporary.store(false);
  if (path == nullptr || std::strlen(path) >= sizeof g_temporary) return;
  std::strcpy(g_temporary, path);
  g_has_temporary.store(true);
}

const char* temporary_file() { return g_has_temporary.load() ? g_temporary : nullptr; }

void set_waited_child(pid_t pid) { g_child.store(pid); }
pid_t waited_child() { return g_child.load(); }

int remove_on_interrupt(const char* path, bool directory) {
  if (path == nullptr || std::strlen(path) >= sizeof g_leftover_paths[0]) return -1;
  for (int i = 0; i < kMaxLeftovers; ++i) {
    int expected = kFree;
    if (!g_leftover_kinds[i].compare_exchange_strong(expected, kWriting)) continue;
    std::strcpy(g_leftover_paths[i], path);
    g_leftover_kinds[i].store(directory ? kDirectory : kFile);
    return i;
  }
  return -1;
}

void forget_on_interrupt(int handle) {
  if (handle >= 0 && handle < kMaxLeftovers) g_leftover_kinds[handle].store(kFree);
}

void remove_leftovers() {
  // A directory is removed only once empty: its files first.
  for (const int kind : {kFile, kDirectory}) {
    for (int i = 0; i < kMaxLeftovers; ++i) {
      if (g_leftover_kinds[i].load() != kind) continue;
      if (kind == kFile) {
        unlink(g_leftover_paths[i]);
      } else {
        rmdir(g_leftover_paths[i]);
      }
    }
  }
}

}  // namespace tleak::diagnosis
