#include "local_debuginfo.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <cstring>
#include <string>

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

}  // namespace

int find_local_debuginfo(Dwfl_Module* module, void** userdata, const char* module_name, Dwarf_Addr base,
                         const char* file_name, const char* debuglink_file, GElf_Word debuglink_crc,
                         char** debuginfo_file_name) {
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
      return fd;
    }
    close(fd);
  }
  return -1;
}

}  // namespace tleak
