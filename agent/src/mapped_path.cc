#include "mapped_path.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>

namespace tleak::agent {
namespace {

// A hexadecimal field up to `end`; false unless it is one.
bool parse_hex(const char*& p, const char* end, std::uintptr_t* out) {
  std::uintptr_t value = 0;
  const char* start = p;
  for (; p < end; ++p) {
    const char c = *p;
    int digit;
    if (c >= '0' && c <= '9') digit = c - '0';
    else if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    else break;
    value = value * 16 + static_cast<std::uintptr_t>(digit);
  }
  *out = value;
  return p > start;
}

// One line of /proc/self/maps ("start-end perms offset dev inode   path"): whether it maps
// `address`, and if so its path, written to `out`.
enum class Line { kElsewhere, kFound, kUnnamed };
Line read_line(const char* p, const char* end, std::uintptr_t address, char* out, std::size_t out_bytes) {
  std::uintptr_t start = 0, stop = 0;
  if (!parse_hex(p, end, &start) || p >= end || *p++ != '-' || !parse_hex(p, end, &stop)) return Line::kElsewhere;
  if (address < start || address >= stop) return Line::kElsewhere;
  // The path is the rest after five fields: its first '/' (pseudo-files such as "[heap]" have none).
  const char* slash = static_cast<const char*>(std::memchr(p, '/', static_cast<std::size_t>(end - p)));
  if (slash == nullptr) return Line::kUnnamed;
  const auto length = static_cast<std::size_t>(end - slash);
  if (length + 1 > out_bytes) return Line::kUnnamed;
  std::memcpy(out, slash, length);
  out[length] = '\0';
  return Line::kFound;
}

}  // namespace

bool mapped_path(std::uintptr_t address, char* out, std::size_t out_bytes) {
  const int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  // Lines are at most a few hundred bytes (a path of up to PATH_MAX): a buffer twice that size
  // always holds a whole line once the part already read is moved to its front.
  static char buffer[16384];
  std::size_t held = 0;
  Line found = Line::kElsewhere;
  for (bool more = true; more && found == Line::kElsewhere;) {
    const ssize_t got = read(fd, buffer + held, sizeof buffer - held);
    if (got < 0) break;
    more = got > 0;
    held += static_cast<std::size_t>(got > 0 ? got : 0);
    const char* p = buffer;
    const char* end = buffer + held;
    for (;;) {
      const char* newline = static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
      if (newline == nullptr && more) break;  // the rest of this line comes with the next read
      const char* line_end = newline != nullptr ? newline : end;
      if (line_end > p) found = read_line(p, line_end, address, out, out_bytes);
      if (found != Line::kElsewhere || newline == nullptr) break;
      p = newline + 1;
    }
    held = static_cast<std::size_t>(end - p);
    if (held == sizeof buffer) break;  // a line longer than the buffer: not a mapping's
    std::memmove(buffer, p, held);
  }
  close(fd);
  return found == Line::kFound;
}

}  // namespace tleak::agent
