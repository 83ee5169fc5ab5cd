#include "memory_map.h"

#include <fcntl.h>

namespace tleak::agent {
namespace {

// A hexadecimal field; false unless there is at least one digit before `end`.
bool parse_hex(const char*& p, const char* end, std::uint64_t* out) {
  std::uint64_t value = 0;
  const char* first = p;
  for (; p < end; ++p) {
    const char c = *p;
    if (c >= '0' && c <= '9') value = value * 16 + static_cast<std::uint64_t>(c - '0');
    else if (c >= 'a' && c <= 'f') value = value * 16 + static_cast<std::uint64_t>(c - 'a' + 10);
    else break;
  }
  *out = value;
  return p > first;
}

}  // namespace

int open_memory_map() {
  const int fd = open("/proc/thread-self/maps", O_RDONLY | O_CLOEXEC);
  return fd >= 0 ? fd : open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
}

bool parse_mapping(const char* line, const char* end, Mapping* out) {
  const char* p = line;
  if (!parse_hex(p, end, &out->start) || p >= end || *p++ != '-' || !parse_hex(p, end, &out->end)) return false;
  if (end - p < 5 || *p++ != ' ') return false;
  out->readable = p[0] == 'r';
  out->writable = p[1] == 'w';
  out->is_private = p[3] == 'p';
  const char* path = p + 4;
  while (path < end && *path != '/' && *path != '[') ++path;
  out->path = path;
  out->path_end = end;
  return true;
}

}  // namespace tleak::agent
