// The socket a process run under --record connects to when it lost tleak's descriptors: a name of
// its own for each run, and a connection taken only from the process that claimed the recording.
#include "record_listener.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <vector>

namespace tleak::diagnosis {
namespace {

Fd connect_to(const std::string& name) {
  Fd fd(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path + 1, name.data(), name.size());
  const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  EXPECT_EQ(connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), length), 0) << std::strerror(errno);
  return fd;
}

TEST(RecordListener, EachRunListensUnderANameOfItsOwn) {
  RecordListener a, b;
  EXPECT_NE(a.name(), b.name());
  EXPECT_EQ(a.name().rfind("tleak-" + std::to_string(getpid()) + "-", 0), 0u) << a.name();
  EXPECT_EQ(a.name().size(), std::string("tleak-" + std::to_string(getpid()) + "-").size() + 24);
}

TEST(RecordListener, OnlyTheClaimingProcessIsAccepted) {
  RecordListener listener;
  // Nothing waiting: nothing accepted (and no wait: the socket does not block).
  EXPECT_LT(listener.accept_from(getpid()).get(), 0);
  {
    // From a process that did not claim the recording (here, this one, where another pid did).
    Fd stranger = connect_to(listener.name());
    EXPECT_LT(listener.accept_from(getpid() + 1).get(), 0);
    char byte = 0;
    // Closed on tleak's side: the stranger's end reads its end.
    EXPECT_EQ(recv(stranger.get(), &byte, 1, 0), 0);
  }
  Fd claimant = connect_to(listener.name());
  const char sent[] = "hello";
  ASSERT_EQ(send(claimant.get(), sent, sizeof sent, 0), static_cast<ssize_t>(sizeof sent));
  Fd accepted = listener.accept_from(getpid());
  ASSERT_GE(accepted.get(), 0);
  char got[16] = {};
  // Sent before it was accepted: waiting for tleak on the new connection.
  EXPECT_EQ(recv(accepted.get(), got, sizeof got, 0), static_cast<ssize_t>(sizeof sent));
  EXPECT_STREQ(got, sent);
}

// With no descriptor left for the connection (tleak at its limit), it cannot be taken: the listener
// closes rather than stay readable (tleak's loop would spin on it) with the process that connected
// waiting for tleak; that process's end says so, and it runs on unrecorded.
TEST(RecordListener, AConnectionThatCannotBeTakenEndsAndTheListenerCloses) {
  RecordListener listener;
  Fd claimant = connect_to(listener.name());
  rlimit given{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &given), 0);
  // Every number below the limit in use, the limit just above the highest.
  rlimit low = given;
  low.rlim_cur = static_cast<rlim_t>(claimant.get()) + 1;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<Fd> fillers;
  for (int fd; (fd = dup(claimant.get())) >= 0;) fillers.emplace_back(fd);
  const int error = errno;
  Fd accepted = listener.accept_from(getpid());
  fillers.clear();
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &given), 0);
  ASSERT_EQ(error, EMFILE);
  EXPECT_LT(accepted.get(), 0);
  EXPECT_EQ(listener.fd(), -1);
  EXPECT_EQ(listener.failure(), "accept: Too many open files");
  const char sent[] = "hello";
  EXPECT_EQ(send(claimant.get(), sent, sizeof sent, MSG_NOSIGNAL), -1);
  EXPECT_TRUE(errno == ECONNRESET || errno == EPIPE) << std::strerror(errno);
}

}  // namespace
}  // namespace tleak::diagnosis
