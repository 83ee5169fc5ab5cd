#include "channel.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>

#include "agent.h"
#include "descriptors.h"

namespace tleak::agent {
namespace {

std::atomic<int> g_fd{-1};
// Sends in flight, or -1 while the channel moves to another descriptor: no send ever goes to a
// number the program is taking over.
std::atomic<int> g_senders{0};
volatile std::uint64_t* g_lost = nullptr;
// The process whose descriptor g_fd is. A vfork child (posix_spawn's too) shares the agent's memory
// but has a table of descriptors of its own: what it does to the channel's number is its own
// table's, and must not move the parent's channel to a number only the child has.
pid_t g_owner = 0;

// The lowest descriptor number the agent's copy may take: far from those a program opens.
constexpr int kFirstAgentFd = 900;

// A copy of `fd` far from low numbers: at kFirstAgentFd, or where the process's limit on descriptors
// (below that in some shells and services) leaves room, near its top; as a last resort, anywhere.
int high_copy(int fd) {
  int floor = kFirstAgentFd;
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur <= kFirstAgentFd) {
    floor = static_cast<int>(limit.rlim_cur * 3 / 4);
  }
  int high = floor > 3 ? fcntl(fd, F_DUPFD_CLOEXEC, floor) : -1;
  if (high < 0) high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  return high;
}

void take_shared() {
  for (;;) {
    int senders = g_senders.load(std::memory_order_relaxed);
    if (senders >= 0 && g_senders.compare_exchange_weak(senders, senders + 1, std::memory_order_acquire)) return;
    __builtin_ia32_pause();
  }
}

void release_shared() { g_senders.fetch_sub(1, std::memory_order_release); }
// Received bytes not yet handed out: the parent's messages need not align with the reader's calls.
unsigned char g_pending[64 * 1024];
std::size_t g_pending_begin = 0, g_pending_end = 0;

}  // namespace

bool is_tleak_stream(int fd, pid_t tleak) {
  struct stat st;
  if (fd < 0 || tleak <= 0 || fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
  int type = 0;
  socklen_t type_bytes = sizeof type;
  ucred peer{};
  socklen_t peer_bytes = sizeof peer;
  return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &type_bytes) == 0 && type == SOCK_SEQPACKET &&
         getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &peer_bytes) == 0 && peer.pid == tleak;
}

bool channel_open(int fd, pid_t tleak, volatile std::uint64_t* lost) {
  if (!is_tleak_stream(fd, tleak)) return false;
  // The agent writes through a private copy far from low numbers, so the program's own open()
  // never lands on it; the original stays open for an image this process may exec into.
  const int high = high_copy(fd);
  if (high < 0) return false;
  g_lost = lost;
  g_owner = getpid();
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
  if (g_fd.load(std::memory_order_acquire) < 0) return false;
  NoCancellation no_cancellation;
  take_shared();
  const int fd = g_fd.load(std::memory_order_acquire);
  bool sent_all = false;
  while (fd >= 0) {
    const ssize_t sent = send(fd, data, bytes, MSG_NOSIGNAL);
    if (sent == static_cast<ssize_t>(bytes)) {
      sent_all = true;
      break;
    }
    if (sent < 0 && errno == EINTR) continue;
    // Not the parent's socket any more (the program closed or replaced it without the C library):
    // nothing more can reach the parent. Said once, through the control page.
    // Or a seccomp filter of the program's refused the send (an error number it chose: EPERM,
    // EACCES or ENOSYS, as sandboxes do): what follows would be refused too. The control page says
    // which.
    const bool refused = sent < 0 && (errno == EPERM || errno == EACCES || errno == ENOSYS);
    if (refused || (sent < 0 && (errno == EBADF || errno == ENOTSOCK || errno == EPIPE || errno == ECONNRESET ||
                                 errno == ENOTCONN))) {
      int expected = fd;
      if (g_fd.compare_exchange_strong(expected, -1, std::memory_order_acq_rel) && g_lost != nullptr) {
        *g_lost = refused ? kChannelRefused : kChannelTakenAway;
        agent_channel_lost();
      }
    }
    break;
  }
  release_shared();
  return sent_all;
}

bool channel_is(int fd) { return fd >= 0 && fd == g_fd.load(std::memory_order_acquire); }

int channel_descriptor() { return g_fd.load(std::memory_order_acquire); }

bool channel_opened_here() { return getpid() == g_owner; }

void channel_move_off(int fd) {
  if (!channel_is(fd) || !channel_opened_here()) return;
  const int saved_errno = errno;
  for (;;) {  // no send in flight, and none starts until the move is done
    int expected = 0;
    if (g_senders.compare_exchange_weak(expected, -1, std::memory_order_acquire)) break;
    __builtin_ia32_pause();
  }
  if (g_fd.load(std::memory_order_relaxed) == fd) {
    const int moved = high_copy(fd);
    g_fd.store(moved, std::memory_order_release);  // -1 (no descriptor left): nothing more is sent
    if (moved < 0 && g_lost != nullptr) {
      *g_lost = kChannelTakenAway;
      agent_channel_lost();
    }
  }
  g_senders.store(0, std::memory_order_release);
  errno = saved_errno;
}

void channel_close() {
  if (!channel_opened_here()) return;
  const int saved_errno = errno;
  for (;;) {  // no send in flight, and none starts: the descriptor is gone once this returns
    int expected = 0;
    if (g_senders.compare_exchange_weak(expected, -1, std::memory_order_acquire)) break;
    __builtin_ia32_pause();
  }
  const int fd = g_fd.exchange(-1, std::memory_order_acq_rel);
  if (fd >= 0) real::close(fd);
  g_senders.store(0, std::memory_order_release);
  errno = saved_errno;
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
