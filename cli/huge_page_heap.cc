#include "huge_page_heap.h"

#include <unistd.h>
#include <valgrind/valgrind.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

extern char** environ;

namespace tleak::cli {
namespace {

constexpr const char* kTunables = "GLIBC_TUNABLES";
constexpr const char* kHugeHeap = "glibc.malloc.hugetlb=1";
// Set only between the two images: whether the user had GLIBC_TUNABLES, and its value.
constexpr const char* kReexecuted = "TLEAK_REEXECUTED_FOR_HUGE_PAGES";
constexpr const char* kSavedTunables = "TLEAK_SAVED_GLIBC_TUNABLES";

bool built_with_sanitizer() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}

bool huge_pages_available() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string modes;
  return std::getline(in, modes) && modes.find("[never]") == std::string::npos;
}

// The sub-commands whose memory grows with the workload or the report.
bool heavy_command(const char* name) {
  for (const char* heavy : {"run", "check", "diff", "view", "export"}) {
    if (std::strcmp(name, heavy) == 0) return true;
  }
  return false;
}

void restore_user_environment() {
  if (const char* saved = std::getenv(kSavedTunables)) {
    setenv(kTunables, saved, 1);
  } else {
    unsetenv(kTunables);
  }
  unsetenv(kSavedTunables);
  unsetenv(kReexecuted);
}

}  // namespace

void use_huge_pages_for_heap(char** argv) {
  if (std::getenv(kReexecuted) != nullptr) {
    restore_user_environment();
    return;
  }
  if (argv[0] == nullptr || argv[1] == nullptr || !heavy_command(argv[1])) return;
  if (RUNNING_ON_VALGRIND || built_with_sanitizer() || !huge_pages_available()) return;
  // The file itself, not /proc/self/exe: the process keeps its name ("tleak", not "exe") in ps and
  // top. Replaced or removed since it started: no re-execution.
  char self[4096];
  const ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
  if (length <= 0 || length >= static_cast<ssize_t>(sizeof self - 1)) return;
  self[length] = '\0';
  if (access(self, X_OK) != 0) return;
  const char* user_tunables = std::getenv(kTunables);
  if (user_tunables != nullptr && std::strstr(user_tunables, "glibc.malloc.hugetlb") != nullptr) return;

  const std::string tunables =
      user_tunables != nullptr && *user_tunables != '\0' ? std::string(user_tunables) + ":" + kHugeHeap : kHugeHeap;
  if (user_tunables != nullptr && setenv(kSavedTunables, user_tunables, 1) != 0) return;
  if (setenv(kTunables, tunables.c_str(), 1) != 0 || setenv(kReexecuted, "1", 1) != 0) {
    restore_user_environment();
    return;
  }
  execve(self, argv, environ);
  // No permission, or gone meanwhile: carry on with the ordinary heap and the user's environment.
  restore_user_environment();
}

}  // namespace tleak::cli
