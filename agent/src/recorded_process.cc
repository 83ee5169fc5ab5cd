#include "recorded_process.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <string_view>

#include "channel.h"
#include "command_line.h"

namespace tleak::agent {
namespace {

const char* last_part(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash != nullptr ? slash + 1 : path;
}

}  // namespace

bool runs_program(const char* name, const char* executable) {
  if (std::strcmp(last_part(executable), name) == 0) return true;
  const std::string_view words = this_command_line().words;
  const std::size_t first_end = words.find('\0');
  // No end to the first word: one past the buffer, far longer than any NAME (or no command line).
  if (first_end == std::string_view::npos) return false;
  if (std::strcmp(last_part(words.data()), name) == 0) return true;
  std::string_view target = this_python_main(executable).target;
  if (const std::size_t slash = target.rfind('/'); slash != std::string_view::npos) target.remove_prefix(slash + 1);
  return !target.empty() && target == name;
}

const char* program_name(const char* executable) {
  static char name[sizeof(ControlPage::OtherProcess::executable)];
  const std::string_view target = this_python_main(executable).target;
  if (target.empty()) return executable;
  // The end of a long path: its file name is what is shown.
  const std::size_t keep = target.size() < sizeof name ? target.size() : sizeof name - 1;
  const std::string_view kept(target.data() + target.size() - keep, keep);
  std::memcpy(name, kept.data(), kept.size());
  name[kept.size()] = '\0';
  return name;
}

namespace {

// A connection to tleak's listener (its abstract name, `name`), if tleak answers it: its peer must
// be tleak, as for the inherited socket. -1 otherwise.
int connect_to_tleak(const char* name, pid_t tleak) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::size_t length = std::strlen(name);
  if (length == 0 || length + 1 > sizeof address.sun_path) return -1;
  std::memcpy(address.sun_path + 1, name, length);
  // Not blocking while connecting: a listener whose queue is full (tleak not answering) would hold
  // the program's start-up; it then runs unrecorded. Blocking again once connected: the agent's
  // sends wait for tleak, as on the inherited socket.
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  if (connect(fd, reinterpret_cast<const sockaddr*>(&address),
              static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + length)) != 0 ||
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0 || !is_tleak_stream(fd, tleak)) {
    close(fd);
    return -1;
  }
  // Room for bursts, as tleak gives the end of the socket pair it passes on (past the system's
  // limit only for root).
  int bytes = 8 << 20;
  if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &bytes, sizeof bytes) != 0) {
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
  }
  return fd;
}

// The stream a process that claimed the recording has, or can have: the one it inherited, else a
// connection of its own.
RecordDecision adopt_stream(ControlPage* control, int stream_fd, const char* stream_name) {
  const auto tleak = static_cast<pid_t>(control->tleak_pid);
  if (is_tleak_stream(stream_fd, tleak)) return {RecordClaim::kRecorded, stream_fd, false};
  const int connection = stream_name != nullptr ? connect_to_tleak(stream_name, tleak) : -1;
  if (connection < 0) return {RecordClaim::kNoDescriptors, -1, false};
  return {RecordClaim::kRecorded, connection, true};
}

// Claims the recording for this process (`pid`), then adopts its stream; gives the claim back if
// there is none, for the next process that may have one.
RecordDecision claim_then_adopt(ControlPage* control, std::uint32_t pid, int stream_fd, const char* stream_name) {
  std::uint32_t unclaimed = 0;
  // Claimed before connecting: tleak takes a connection only from the process that claimed.
  if (!__atomic_compare_exchange_n(&control->recorded_pid, &unclaimed, pid, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    return {};
  }
  RecordDecision decision = adopt_stream(control, stream_fd, stream_name);
  if (decision.claim != RecordClaim::kRecorded) __atomic_store_n(&control->recorded_pid, 0u, __ATOMIC_RELEASE);
  decision.claimed = decision.claim == RecordClaim::kRecorded;
  return decision;
}

}  // namespace

RecordDecision claim_forked_copy(ControlPage* control, int stream_fd, const char* stream_name) {
  if (control == nullptr) return {};
  return claim_then_adopt(control, static_cast<std::uint32_t>(getpid()), stream_fd, stream_name);
}

RecordDecision claim_recording(ControlPage* control, const char* name, int stream_fd, const char* stream_name,
                               const char* executable) {
  const auto pid = static_cast<std::uint32_t>(getpid());
  const std::uint32_t recorded = __atomic_load_n(&control->recorded_pid, __ATOMIC_ACQUIRE);
  // An image the recorded process exec'd: the same pid. (Once it ended, tleak set kRecordedEnded: the
  // system may give its pid to another process.)
  if (recorded == pid) {
    const RecordDecision decision = adopt_stream(control, stream_fd, stream_name);
    return decision.claim == RecordClaim::kRecorded ? decision : RecordDecision{};
  }
  if (recorded != 0 || !runs_program(name, executable)) return {};
  return claim_then_adopt(control, pid, stream_fd, stream_name);
}

}  // namespace tleak::agent
