#include "mapped_path.h"

#include <unistd.h>

#include <cstring>

#include "memory_map.h"

namespace tleak::agent {

bool mapped_path(std::uintptr_t address, char* out, std::size_t out_bytes) {
  const int fd = open_memory_map();
  if (fd < 0) return false;
  // Lines are at most a few hundred bytes (a path of up to PATH_MAX): a buffer four times that
  // always holds a whole line once the part already read is moved to its front.
  static char buffer[16384];
  std::size_t held = 0;
  bool found = false, named = false;
  for (bool more = true; more && !found;) {
    const ssize_t got = read(fd, buffer + held, sizeof buffer - held);
    if (got < 0) break;
    more = got > 0;
    held += static_cast<std::size_t>(got > 0 ? got : 0);
    const char* p = buffer;
    const char* end = buffer + held;
    while (!found) {
      const char* newline = static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
      if (newline == nullptr && more) break;  // the rest of this line comes with the next read
      const char* line_end = newline != nullptr ? newline : end;
      Mapping m;
      if (parse_mapping(p, line_end, &m) && address >= m.start && address < m.end) {
        found = true;
        // A file's path; pseudo-files ("[heap]") have none.
        const auto length = static_cast<std::size_t>(m.path_end - m.path);
        named = length > 0 && m.path[0] == '/' && length + 1 <= out_bytes;
        if (named) {
          std::memcpy(out, m.path, length);
          out[length] = '\0';
        }
      }
      if (newline == nullptr) break;
      p = newline + 1;
    }
    held = static_cast<std::size_t>(end - p);
    if (held == sizeof buffer) break;  // a line longer than the buffer: not a mapping's
    std::memmove(buffer, p, held);
  }
  close(fd);
  return named;
}

}  // namespace tleak::agent
