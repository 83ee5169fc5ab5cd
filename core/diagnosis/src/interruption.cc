#include "tleak/diagnosis/interruption.h"

#include <unistd.h>

#include <atomic>
#include <cstring>

namespace tleak::diagnosis {
namespace {

std::atomic<pid_t> g_child{0};

// A slot of the table: free, being written (not yet to be removed), a file or a directory.
enum Slot : int { kFree = 0, kWriting = 1, kFile = 2, kDirectory = 3 };
constexpr int kSlots = RemovedOnInterrupt::kMaxRemovedOnInterrupt;
char g_paths[kSlots][4096];
std::atomic<int> g_kinds[kSlots];

}  // namespace

void set_waited_child(pid_t pid) { g_child.store(pid); }
pid_t waited_child() { return g_child.load(); }

RemovedOnInterrupt::RemovedOnInterrupt(const std::string& path, Kind kind) : slot_(-1) {
  if (path.size() >= sizeof g_paths[0]) return;
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (!g_kinds[i].compare_exchange_strong(expected, kWriting)) continue;
    std::memcpy(g_paths[i], path.c_str(), path.size() + 1);
    g_kinds[i].store(kind == Kind::kDirectory ? kDirectory : kFile);
    slot_ = i;
    return;
  }
}

RemovedOnInterrupt::~RemovedOnInterrupt() {
  if (slot_ >= 0) g_kinds[slot_].store(kFree);
}

void remove_registered_files() {
  // A directory is removed only once empty: its files first.
  for (const int kind : {kFile, kDirectory}) {
    for (int i = 0; i < kSlots; ++i) {
      if (g_kinds[i].load() != kind) continue;
      if (kind == kFile) {
        unlink(g_paths[i]);
      } else {
        rmdir(g_paths[i]);
      }
    }
  }
}

}  // namespace tleak::diagnosis
