#include "local_debuginfo.h"

#include "debuginfo_cache.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

namespace tleak {
namespace {

// The CRC-32 .gnu_debuglink records of the whole file (zlib's polynomial), or false if unreadable.
bool file_crc(int fd, unsigned long* crc) {
  unsigned char chunk[1 << 16];
  uLong value = crc32(0L, Z_NULL, 0);
  for (off_t at = 0;;) {
    const ssize_t n = pread(fd, chunk, sizeof chunk, at);
    if (n < 0) return false;
    if (n == 0) break;
    value = crc32(value, chunk, static_cast<uInt>(n));
    at += n;
  }
  *crc = value;
  return true;
}

std::string_view build_id_of(Dwfl_Module* module) {
  const unsigned char* bits = nullptr;
  GElf_Addr vaddr = 0;
  const int n = dwfl_module_build_id(module, &bits, &vaddr);
  return n > 0 ? std::string_view(reinterpret_cast<const char*>(bits), static_cast<std::size_t>(n)) : std::string_view();
}

// The uncompressed copy (debuginfo_cache.h) of the debug file open as `fd` (closed then, and the
// name given the copy's), or `fd` itself.
int prefer_uncompressed(Dwfl_Module* module, int fd, char** debuginfo_file_name) {
  std::string path;
  const int copy = uncompressed_debuginfo(fd, build_id_of(module), debuginfo_cache_directory(), &path);
  if (copy < 0) return fd;
  close(fd);
  std::free(*debuginfo_file_name);
  *debuginfo_file_name = strdup(path.c_str());
  return copy;
}

// The copy of the module's debug file under /usr/lib/debug/.build-id (libdw's default path, the
// one Symbolizer gives it), when that file calls for one; else -1. Looked up here rather than
// after dwfl_build_id_find_debuginfo, which hands libdw the file it found itself.
int uncompressed_by_build_id(Dwfl_Module* module, char** debuginfo_file_name) {
  const std::string hex = build_id_hex(build_id_of(module));
  if (hex.size() < 4) return -1;
  const std::string path = "/usr/lib/debug/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2) + ".debug";
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  const int chosen = prefer_uncompressed(module, fd, debuginfo_file_name);
  if (chosen != fd) return chosen;
  close(fd);  // no copy called for: libdw's own search finds this file
  return -1;
}

}  // namespace

int find_local_debuginfo(Dwfl_Module* module, void** userdata, const char* module_name, Dwarf_Addr base,
                         const char* file_name, const char* debuglink_file, GElf_Word debuglink_crc,
                         char** debuginfo_file_name) {
  // A module whose debug file is open already asks for its dwz alternate file: found as before.
  const char* debug_file = nullptr;
  dwfl_module_info(module, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, &debug_file);
  if (debug_file == nullptr) {
    if (const int copy = uncompressed_by_build_id(module, debuginfo_file_name); copy >= 0) return copy;
  }
  const int by_build_id = dwfl_build_id_find_debuginfo(module, userdata, module_name, base, file_name, debuglink_file,
                                                       debuglink_crc, debuginfo_file_name);
  if (by_build_id >= 0 || file_name == nullptr || debuglink_file == nullptr || debuglink_file[0] == '\0' ||
      std::strchr(debuglink_file, '/') != nullptr) {
    return by_build_id;
  }
  const std::string file(file_name);
  const std::string directory = file.substr(0, file.rfind('/') + 1);  // with its slash; empty if none
  for (const std::string& candidate : {directory + debuglink_file, directory + ".debug/" + debuglink_file,
                                       "/usr/lib/debug" + (directory.empty() || directory[0] != '/' ? "/" + directory : directory) + debuglink_file}) {
    if (candidate == file) continue;  // the debuglink names the stripped file itself
    const int fd = open(candidate.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    unsigned long crc = 0;
    if (file_crc(fd, &crc) && static_cast<GElf_Word>(crc) == debuglink_crc) {
      *debuginfo_file_name = strdup(candidate.c_str());
      return debug_file == nullptr ? prefer_uncompressed(module, fd, debuginfo_file_name) : fd;
    }
    close(fd);
  }
  return -1;
}

}  // namespace tleak
