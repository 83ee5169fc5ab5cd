// How tleak reads the agent's stream while the program runs. A reader blocked on the socket is
// woken by every message the agent sends, and on a virtual machine each such wake-up costs the
// sending thread an inter-processor interrupt: a program that marks 10,000 iterations a second
// spent a tenth of its time there. So after a read that found only a trickle, tleak sleeps a
// little instead of waiting on the socket: the agent's messages meanwhile land in the socket's
// buffer without waking anyone. A heavy stream (a read of a quarter of the buffer or more) is read
// again at once, so the program never waits for room.
#pragma once

#include <errno.h>
#include <time.h>

#include <algorithm>
#include <cstddef>

namespace tleak::diagnosis {

class ReadPacing {
 public:
  // Far below what a person notices, and the agent's stream fits in the buffer meanwhile.
  static constexpr long kPauseNanoseconds = 2'000'000;

  explicit ReadPacing(std::size_t socket_buffer_bytes)
      : heavy_read_bytes_(std::max<std::size_t>(socket_buffer_bytes / 4, 16 * 1024)) {}

  // Whether to pause after a read of `bytes` (zero: the socket was only woken, nothing to batch).
  bool should_pause(std::size_t bytes) const { return bytes > 0 && bytes < heavy_read_bytes_; }

  void pause() const {
    timespec pause{0, kPauseNanoseconds};
    while (nanosleep(&pause, &pause) != 0 && errno == EINTR) {
    }
  }

 private:
  std::size_t heavy_read_bytes_;
};

}  // namespace tleak::diagnosis
