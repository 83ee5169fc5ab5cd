// A file tleak holds, opened by a process that lost the descriptor it would have inherited (its
// parent closed it: Python's subprocess does): through tleak's own, /proc/PID/fd/N, whose path the
// environment gives (the control page's, kEnvControlPath; the message slots', kEnvSlotsPath).
#pragma once

#include <fcntl.h>

#include <cstring>

namespace tleak::agent {

// The descriptor, or -1 (no path, not a /proc path, or not to be opened). The caller closes it.
inline int open_tleak_file(const char* path) {
  if (path == nullptr || std::strncmp(path, "/proc/", 6) != 0) return -1;
  return open(path, O_RDWR | O_CLOEXEC);
}

}  // namespace tleak::agent
