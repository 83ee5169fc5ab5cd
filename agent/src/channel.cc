#include "channel.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>

namespace tleak::agent {
namespace {

std::atomic<int> g_fd{-1};
// Received bytes not yet handed out: the parent's messages need not align with the reader's calls.
unsigned char g_pending[64 * 1024];
std::size_t g_pending_begin = 0, g_pending_end = 0;

}  // namespace

bool channel_open(int fd) {
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
  // The descriptor must still be the parent's socket: a program may have closed it and opened one
  // of its own under the same number before exec'ing; the agent must never write into that.
  int type = 0;
  socklen_t type_bytes = sizeof type;
  ucred peer{};
  socklen_t peer_bytes = sizeof peer;
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &type_bytes) != 0 || type != SOCK_SEQPACKET ||
      getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &peer_bytes) != 0 || peer.pid != getppid()) {
    return false;
  }
  // The agent writes through a private copy far from low numbers, so the program's own open()
  // never lands on it; the original stays open for an image this process may exec into.
  const int high = fcntl(fd, F_DUPFD_CLOEXEC, 900);
  if (high < 0) return false;
  // The exit handshake waits for the parent; never forever.
  timeval timeout{120, 0};
  setsockopt(high, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  g_fd.store(high, std::memory_order_release);
  return true;
}

// send() and recv() are cancellation points: a thread cancelled there would end holding its
// buffer's lock, and the next fence would wait for it forever. Cancellation waits until after.
class NoCancellation {
 public:
  NoCancellation() { pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &previous_); }
  ~NoCancellation() { pthread_setcancelstate(previous_, nullptr); }
  NoCancellation(const NoCancellation&) = delete;
  NoCancellation& operator=(const NoCancellation&) = delete;

 private:
  int previous_ = PTHREAD_CANCEL_ENABLE;
};

bool channel_send(const void* data, std::size_t bytes) {
  const int fd = g_fd.load(std::memory_order_acquire);
  if (fd < 0) return false;
  NoCancellation no_cancellation;
  for (;;) {
    const ssize_t sent = send(fd, data, bytes, MSG_NOSIGNAL);
    if (sent == static_cast<ssize_t>(bytes)) return true;
    if (sent < 0 && errno == EINTR) continue;
    return false;
  }
}

bool channel_receive(void* data, std::size_t bytes) {
  const int fd = g_fd.load(std::memory_order_acquire);
  NoCancellation no_cancellation;
  auto* out = static_cast<unsigned char*>(data);
  while (bytes > 0) {
    if (g_pending_begin == g_pending_end) {
      if (fd < 0) return false;
      const ssize_t got = recv(fd, g_pending, sizeof g_pending, 0);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return false;
      g_pending_begin = 0;
      g_pending_end = static_cast<std::size_t>(got);
    }
    std::size_t n = g_pending_end - g_pending_begin;
    if (n > bytes) n = bytes;
    for (std::size_t i = 0; i < n; ++i) out[i] = g_pending[g_pending_begin + i];
    g_pending_begin += n;
    out += n;
    bytes -= n;
  }
  return true;
}

void channel_forget() { g_fd.store(-1, std::memory_order_release); }

}  // namespace tleak::agent
