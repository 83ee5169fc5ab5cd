#include "record_listener.h"

#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>

#include "tleak/diagnosis/program_session.h"

namespace tleak::diagnosis {

RecordListener::RecordListener() {
  unsigned char random[12] = {};
  if (getrandom(random, sizeof random, 0) != static_cast<ssize_t>(sizeof random)) {
    throw ProgramError(std::string("getrandom: ") + std::strerror(errno));
  }
  name_ = "tleak-" + std::to_string(getpid()) + "-";
  for (const unsigned char byte : random) {
    char hex[3];
    std::snprintf(hex, sizeof hex, "%02x", byte);
    name_ += hex;
  }
  socket_.reset(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path + 1, name_.data(), name_.size());
  const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name_.size());
  if (socket_.get() < 0 || bind(socket_.get(), reinterpret_cast<const sockaddr*>(&address), length) != 0 ||
      listen(socket_.get(), 4) != 0) {
    throw ProgramError(std::string("a socket for --record: ") + std::strerror(errno));
  }
}

Fd RecordListener::accept_from(pid_t pid) {
  Fd connection(accept4(socket_.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (connection.get() < 0) {
    // Still waiting, the listener readable: tleak's loop would spin on it.
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED) {
      failure_ = std::string("accept: ") + std::strerror(errno);
      socket_.reset();
    }
    return Fd();
  }
  ucred peer{};
  socklen_t size = sizeof peer;
  if (getsockopt(connection.get(), SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0 || pid <= 0 || peer.pid != pid) {
    return Fd();
  }
  return connection;
}

}  // namespace tleak::diagnosis
