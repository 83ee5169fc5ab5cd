#include "recorded_process.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>

#include "channel.h"

namespace tleak::agent {
namespace {

const char* last_part(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash != nullptr ? slash + 1 : path;
}

// Whether the process runs `name`: its executable's file name (python3.11), or the one its command
// line starts with (python3, as a script or a shell named it).
bool runs(const char* name, const char* executable) {
  if (std::strcmp(last_part(executable), name) == 0) return true;
  // The first word, and a little more to tell a longer one apart.
  char line[kMaxRecordNameBytes + 2 + 4096] = {};
  const int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  std::size_t got = 0;
  while (got < sizeof line - 1) {
    const ssize_t n = read(fd, line + got, sizeof line - 1 - got);
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
    if (std::memchr(line, '\0', got) != nullptr) break;
  }
  close(fd);
  if (std::memchr(line, '\0', got) == nullptr) return false;  // a first word longer than any NAME
  return std::strcmp(last_part(line), name) == 0;
}

}  // namespace

RecordClaim claim_recording(ControlPage* control, const char* name, int stream_fd, const char* executable) {
  const auto pid = static_cast<std::uint32_t>(getpid());
  const std::uint32_t recorded = __atomic_load_n(&control->recorded_pid, __ATOMIC_ACQUIRE);
  // An image the recorded process exec'd: the same pid. (Once it ended, tleak set kRecordedEnded: the
  // system may give its pid to another process.)
  if (recorded == pid) {
    return is_tleak_stream(stream_fd, static_cast<pid_t>(control->tleak_pid)) ? RecordClaim::kRecorded
                                                                              : RecordClaim::kOther;
  }
  if (recorded != 0 || !runs(name, executable)) return RecordClaim::kOther;
  if (!is_tleak_stream(stream_fd, static_cast<pid_t>(control->tleak_pid))) return RecordClaim::kNoDescriptors;
  std::uint32_t unclaimed = 0;
  return __atomic_compare_exchange_n(&control->recorded_pid, &unclaimed, pid, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)
             ? RecordClaim::kRecorded
             : RecordClaim::kOther;
}

}  // namespace tleak::agent
