#include "huge_page_heap.h"

#include <fcntl.h>
#include <unistd.h>
#include <valgrind/valgrind.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace tleak::cli {
namespace {

// Set only between tleak's two starts: "=" and the caller's GLIBC_TUNABLES, or empty when the
// caller had none.
constexpr const char* kCallerTunables = "TLEAK_CALLER_GLIBC_TUNABLES";
constexpr const char* kTunables = "GLIBC_TUNABLES";

bool runs_a_program(int argc, char** argv) {
  if (argc < 2) return false;
  if (std::strcmp(argv[1], "check") == 0) return true;
  if (std::strcmp(argv[1], "run") != 0) return false;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) return true;
  }
  return false;
}

// "always" gives huge pages without asking, "never" not even then: only "madvise" needs glibc.
bool huge_pages_on_request() {
  const int fd = open("/sys/kernel/mm/transparent_hugepage/enabled", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char text[128] = {};
  const ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  return n > 0 && std::strstr(text, "[madvise]") != nullptr;
}

bool malloc_replaced() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return true;
#else
  return RUNNING_ON_VALGRIND != 0;
#endif
}

}  // namespace

void use_huge_page_heap(int argc, char** argv) {
  if (const char* caller = std::getenv(kCallerTunables)) {
    // The second start: the tunable took effect at start-up; what tleak starts gets the caller's.
    if (caller[0] == '=') {
      setenv(kTunables, caller + 1, 1);
    } else {
      unsetenv(kTunables);
    }
    unsetenv(kCallerTunables);
    return;
  }
  if (!runs_a_program(argc, argv) || malloc_replaced() || !huge_pages_on_request()) return;
  const char* tunables = std::getenv(kTunables);
  if (tunables != nullptr && std::strstr(tunables, "glibc.malloc.hugetlb") != nullptr) return;  // the caller's choice
  const std::string caller = tunables != nullptr ? std::string("=") + tunables : std::string();
  const std::string ours = (tunables != nullptr && tunables[0] != '\0' ? std::string(tunables) + ":" : std::string()) +
                           "glibc.malloc.hugetlb=1";
  // The file itself, not /proc/self/exe: the process keeps its name ("tleak", not "exe") in ps and
  // top. Replaced or removed since it started: no restart.
  char self[4096];
  const ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
  if (length <= 0 || length >= static_cast<ssize_t>(sizeof self - 1)) return;
  self[length] = '\0';
  if (access(self, X_OK) != 0) return;
  if (setenv(kCallerTunables, caller.c_str(), 1) != 0 || setenv(kTunables, ours.c_str(), 1) != 0) return;
  execv(self, argv);
  // The exec failed: go on as started, with the caller's environment.
  if (tunables != nullptr) {
    setenv(kTunables, caller.c_str() + 1, 1);
  } else {
    unsetenv(kTunables);
  }
  unsetenv(kCallerTunables);
}

}  // namespace tleak::cli
