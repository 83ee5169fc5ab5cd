#include "tleak/diagnosis/interruption.h"

#include <atomic>
#include <cstring>

namespace tleak::diagnosis {
namespace {

char g_temporary[4096];
std::atomic<bool> g_has_temporary{false};
std::atomic<pid_t> g_child{0};

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

}  // namespace tleak::diagnosis
