// How tleak reads the agent's stream while the program runs. A reader blocked on the socket is
// woken by every message the agent sends, and on a virtual machine each such wake-up costs the
// sending thread an inter-processor interrupt: a program that marks 10,000 iterations a second
// spent a tenth of its time there. So after a read that emptied the socket, tleak sleeps a little
// instead of waiting on it, and the agent's messages meanwhile land in the socket's buffer without
// waking anyone. The sleep is sized to the stream: at the rate the last read measured, it lets the
// stream fill at most a quarter of the buffer (the system's buffer may be 208 KiB, which a busy
// program fills in a millisecond), and it is skipped when it would be shorter than a wake-up is
// worth.
#pragma once

#include <errno.h>
#include <sys/socket.h>
#include <time.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace tleak::diagnosis {

// Asks for `bytes` of send buffer on the program's end of the socket, past the system's
// net.core.wmem_max when allowed (root), and returns what the kernel granted (its figure, which
// counts its own overhead too).
inline std::size_t set_send_buffer(int fd, int bytes) {
  if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &bytes, sizeof bytes) != 0) {
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
  }
  int granted = 0;
  socklen_t granted_size = sizeof granted;
  getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &granted, &granted_size);
  return static_cast<std::size_t>(std::max(granted, 0));
}

class ReadPacing {
 public:
  static constexpr std::uint64_t kLongestPauseNs = 2'000'000;
  static constexpr std::uint64_t kShortestPauseNs = 100'000;

  explicit ReadPacing(std::size_t socket_buffer_bytes)
      : buffer_bytes_(std::max<std::size_t>(socket_buffer_bytes, 16 * 1024)) {}

  // After a read, at `now_ns`, that emptied the socket of `bytes`: how long to pause (0: wait on
  // the socket instead).
  std::uint64_t pause_after(std::size_t bytes, std::uint64_t now_ns) {
    // Before the first read there is no rate to go by.
    const std::uint64_t elapsed = last_read_ns_ != 0 && now_ns > last_read_ns_ ? now_ns - last_read_ns_ : 0;
    last_read_ns_ = now_ns;
    if (bytes == 0 || bytes >= buffer_bytes_ / 4 || elapsed == 0) return 0;
    // Nanoseconds for the stream, at the rate since the last read, to fill the whole buffer.
    const double ns_per_byte = static_cast<double>(elapsed) / static_cast<double>(bytes);
    const double fill = ns_per_byte * static_cast<double>(buffer_bytes_);
    const std::uint64_t fill_ns = fill > 1e18 ? ~std::uint64_t{0} : static_cast<std::uint64_t>(fill);
    const std::uint64_t pause = std::min(kLongestPauseNs, fill_ns / 4);
    return pause < kShortestPauseNs ? 0 : pause;
  }

  static void sleep(std::uint64_t ns) {
    timespec left{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
    while (nanosleep(&left, &left) != 0 && errno == EINTR) {
    }
  }

  static std::uint64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<std::uint64_t>(ts.tv_nsec);
  }

 private:
  std::size_t buffer_bytes_;
  std::uint64_t last_read_ns_ = 0;
};

}  // namespace tleak::diagnosis
