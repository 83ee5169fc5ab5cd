// The readers take a path, as users give them one: each fuzz input becomes a file the reader opens
// by name (an anonymous memory file, so nothing touches the disk).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

namespace tleak::fuzz {

class InputFile {
 public:
  InputFile(const std::uint8_t* data, std::size_t size) : fd_(memfd_create("tleak-fuzz", MFD_CLOEXEC)) {
    if (fd_ < 0) std::abort();
    for (std::size_t done = 0; done < size;) {
      const ssize_t n = write(fd_, data + done, size - done);
      if (n <= 0) std::abort();
      done += static_cast<std::size_t>(n);
    }
  }
  ~InputFile() { close(fd_); }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

 private:
  int fd_;
};

}  // namespace tleak::fuzz
