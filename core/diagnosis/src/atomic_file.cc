#include "tleak/diagnosis/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace tleak::diagnosis {
namespace {

std::string directory_of(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

}  // namespace

void check_writable(const std::string& path) {
  const std::string dir = directory_of(path);
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    throw FileError(path + ": cannot write: directory " + dir + " does not exist");
  }
  if (std::filesystem::is_directory(path, ec)) throw FileError(path + ": cannot write: it is a directory");
  if (access(dir.c_str(), W_OK) != 0) {
    throw FileError(path + ": cannot write: " + std::strerror(errno));
  }
}

void write_file_atomically(const std::string& path, const std::string& contents) {
  check_writable(path);
  std::string temp = path + ".tmp.XXXXXX";
  const int fd = mkstemp(temp.data());
  if (fd < 0) throw FileError(path + ": cannot create a temporary file: " + std::strerror(errno));
  const char* data = contents.data();
  std::size_t left = contents.size();
  while (left > 0) {
    const ssize_t n = write(fd, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = errno;
      close(fd);
      unlink(temp.c_str());
      throw FileError(path + ": write failed: " + std::strerror(error));
    }
    data += n;
    left -= static_cast<std::size_t>(n);
  }
  // mkstemp creates 0600; a report is an ordinary file.
  fchmod(fd, 0644);
  if (fsync(fd) != 0 || close(fd) != 0) {
    const int error = errno;
    unlink(temp.c_str());
    throw FileError(path + ": cannot flush: " + std::strerror(error));
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    unlink(temp.c_str());
    throw FileError(path + ": cannot replace: " + std::strerror(error));
  }
}

}  // namespace tleak::diagnosis
