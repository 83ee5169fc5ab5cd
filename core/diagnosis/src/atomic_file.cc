#include "tleak/diagnosis/atomic_file.h"
#include "tleak/diagnosis/interruption.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "end_profile.h"

namespace tleak::diagnosis {
namespace {

std::string directory_of(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

// Where the bytes go: a symbolic link is followed (the file it names is replaced, the link stays).
std::string resolve_target(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path target = std::filesystem::weakly_canonical(path, ec);
  return ec || target.empty() ? path : target.string();
}

// Device, FIFO or terminal: written through, never replaced (`-o /dev/null` must leave the system's
// /dev/null as it is).
bool is_special(const std::string& path, struct stat* st) {
  return stat(path.c_str(), st) == 0 && !S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode);
}

void write_all(int fd, const std::string& contents, const std::string& path) {
  const char* data = contents.data();
  std::size_t left = contents.size();
  while (left > 0) {
    const ssize_t n = write(fd, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw FileError(path + ": write failed: " + std::strerror(n < 0 ? errno : ENOSPC));
    data += n;
    left -= static_cast<std::size_t>(n);
  }
}

// The mode a new file gets from this process's umask, as open(..., 0666) would give it.
mode_t default_mode() {
  const mode_t mask = umask(022);
  umask(mask);
  return 0666 & ~mask;
}

}  // namespace

void check_writable(const std::string& given) {
  struct stat st;
  if (is_special(given, &st)) {
    if (S_ISSOCK(st.st_mode)) throw FileError(given + ": cannot write: it is a socket");
    if (access(given.c_str(), W_OK) != 0) throw FileError(given + ": cannot write: " + std::strerror(errno));
    return;
  }
  const std::string path = resolve_target(given);
  const std::string dir = directory_of(path);
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    throw FileError(path + ": cannot write: directory " + dir + " does not exist");
  }
  if (std::filesystem::is_directory(path, ec)) throw FileError(path + ": cannot write: it is a directory");
  if (access(dir.c_str(), W_OK) != 0) {
    throw FileError(path + ": cannot write: " + std::strerror(errno));
  }
  // The file is written through a temporary one beside it: that must be possible, which access()
  // does not tell (root passes it everywhere, and /proc or a read-only mount refuse only the
  // creation). Found out before a run, not after it.
  std::string probe = dir + "/.tleak-probe.XXXXXX";
  const int fd = mkstemp(probe.data());
  if (fd < 0) throw FileError(path + ": cannot write: " + std::strerror(errno));
  close(fd);
  unlink(probe.c_str());
}

void write_file_atomically(const std::string& given, const std::string& contents) {
  check_writable(given);
  struct stat st;
  if (is_special(given, &st)) {
    const int fd = open(given.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) throw FileError(given + ": cannot open: " + std::strerror(errno));
    try {
      write_all(fd, contents, given);
    } catch (...) {
      close(fd);
      throw;
    }
    if (close(fd) != 0) throw FileError(given + ": write failed: " + std::strerror(errno));
    return;
  }
  end_profile::lap("text");
  const std::string path = resolve_target(given);
  // A file replaced keeps its permissions; a new one gets what the umask allows.
  const mode_t mode = stat(path.c_str(), &st) == 0 ? (st.st_mode & 07777) : default_mode();
  std::string temp = path + ".tmp.XXXXXX";
  const int fd = mkstemp(temp.data());
  if (fd < 0) throw FileError(path + ": cannot create a temporary file: " + std::strerror(errno));
  const RemovedOnInterrupt removed_on_interrupt(temp, RemovedOnInterrupt::Kind::kFile);
  try {
    write_all(fd, contents, path);
  } catch (...) {
    close(fd);
    unlink(temp.c_str());
    throw;
  }
  end_profile::lap("write");
  // mkstemp creates 0600; a report is an ordinary file.
  fchmod(fd, mode);
  const int flush_error = fsync(fd) == 0 ? 0 : errno;
  end_profile::lap("fsync");
  if (flush_error != 0 || close(fd) != 0) {
    const int error = flush_error != 0 ? flush_error : errno;
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
