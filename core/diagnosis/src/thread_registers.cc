#include "thread_registers.h"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <system_error>
#include <thread>

namespace tleak::diagnosis {
namespace {

// Calls that Linux ends with EINTR after any stop of the thread, not only after a signal handler
// ran (signal(7), "Interruption of system calls and library functions by stop signals"), or that
// may: a thread blocked in one would see tleak's stop. Socket calls do so only with a timeout set
// on the socket, which tleak cannot see from here.
bool ended_by_a_stop(long call) {
  static constexpr long kCalls[] = {
#ifdef SYS_epoll_wait
      SYS_epoll_wait,
#endif
#ifdef SYS_epoll_pwait
      SYS_epoll_pwait,
#endif
#ifdef SYS_epoll_pwait2
      SYS_epoll_pwait2,
#endif
#ifdef SYS_semop
      SYS_semop,
#endif
#ifdef SYS_semtimedop
      SYS_semtimedop,
#endif
#ifdef SYS_rt_sigtimedwait
      SYS_rt_sigtimedwait,
#endif
#ifdef SYS_accept
      SYS_accept,
#endif
#ifdef SYS_accept4
      SYS_accept4,
#endif
#ifdef SYS_connect
      SYS_connect,
#endif
#ifdef SYS_recvfrom
      SYS_recvfrom,
#endif
#ifdef SYS_recvmsg
      SYS_recvmsg,
#endif
#ifdef SYS_recvmmsg
      SYS_recvmmsg,
#endif
#ifdef SYS_sendto
      SYS_sendto,
#endif
#ifdef SYS_sendmsg
      SYS_sendmsg,
#endif
#ifdef SYS_sendmmsg
      SYS_sendmmsg,
#endif
#ifdef SYS_io_getevents
      SYS_io_getevents,
#endif
#ifdef SYS_io_pgetevents
      SYS_io_pgetevents,
#endif
#ifdef SYS_io_uring_enter
      SYS_io_uring_enter,
#endif
#ifdef SYS_mq_timedreceive
      SYS_mq_timedreceive,
#endif
#ifdef SYS_mq_timedsend
      SYS_mq_timedsend,
#endif
  };
  for (const long c : kCalls) {
    if (c == call) return true;
  }
  return false;
}

// A small /proc file of the thread, read whole; empty if it cannot be.
std::string read_thread_file(pid_t pid, pid_t tid, const char* name) {
  const std::string path = "/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/" + name;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  char buffer[512];
  const ssize_t got = read(fd, buffer, sizeof buffer - 1);
  close(fd);
  return got > 0 ? std::string(buffer, static_cast<std::size_t>(got)) : std::string();
}

// Whether the thread has ended (a zombie: a main thread that called pthread_exit, or one going away).
bool ended(pid_t pid, pid_t tid) {
  const std::string stat = read_thread_file(pid, tid, "stat");
  const auto close_paren = stat.rfind(')');  // the name in parentheses may hold anything
  if (close_paren == std::string::npos || close_paren + 2 >= stat.size()) return true;
  const char state = stat[close_paren + 2];
  return state == 'Z' || state == 'X';
}

// Whether the thread is blocked in a call a stop would end (/proc's "syscall": its number first,
// or "running", or -1 when it waits outside any call).
bool in_a_call_a_stop_ends(pid_t pid, pid_t tid) {
  const std::string call = read_thread_file(pid, tid, "syscall");
  if (call.empty() || call.compare(0, 7, "running") == 0) return false;
  return ended_by_a_stop(std::strtol(call.c_str(), nullptr, 10));
}

std::vector<pid_t> threads_of(pid_t pid) {
  std::vector<pid_t> tids;
  const std::string path = "/proc/" + std::to_string(pid) + "/task";
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) return tids;
  while (const dirent* entry = readdir(dir)) {
    char* end = nullptr;
    const long tid = std::strtol(entry->d_name, &end, 10);
    if (end != entry->d_name && *end == '\0' && tid > 0) tids.push_back(static_cast<pid_t>(tid));
  }
  closedir(dir);
  return tids;
}

// Every step with the traced threads, on one thread of tleak's that ends when they are read: the
// kernel lets go of whatever a tracer that ends still traces (a thread that never stopped in time
// included), so none is left stopped or traced whatever happens here.
void read_on_this_thread(pid_t pid, pid_t exiting_thread, int budget_ms, OtherThreadsRegisters& out) {
  const auto unread = [&out](const std::string& why) {
    ++out.threads_unread;
    if (out.why_unread.empty()) out.why_unread = why;
  };
  std::vector<pid_t> seized;
  for (const pid_t tid : threads_of(pid)) {
    if (tid == exiting_thread || ended(pid, tid)) continue;
    if (in_a_call_a_stop_ends(pid, tid)) {
      unread("blocked in a call, such as epoll_wait, that stopping the thread would end early");
      continue;
    }
    if (ptrace(PTRACE_SEIZE, tid, nullptr, nullptr) != 0) {
      if (errno != ESRCH) unread(std::string("ptrace: ") + std::strerror(errno));
      continue;
    }
    seized.push_back(tid);
    if (ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) != 0 && errno != ESRCH) {
      unread(std::string("ptrace: ") + std::strerror(errno));
      seized.pop_back();
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(budget_ms);
  while (!seized.empty()) {
    for (std::size_t i = 0; i < seized.size();) {
      const pid_t tid = seized[i];
      siginfo_t info{};
      // WNOWAIT: an exit is left for tleak's own wait for the program (a thread that ended here
      // is released as its tracer ends).
      const int waited = waitid(P_PID, static_cast<id_t>(tid), &info, WEXITED | WSTOPPED | __WALL | WNOWAIT | WNOHANG);
      if (waited == 0 && info.si_pid == 0) {  // not stopped yet
        ++i;
        continue;
      }
      if (waited == 0 && info.si_code == CLD_TRAPPED) {
        user_regs_struct registers{};
        iovec vector{&registers, sizeof registers};
        if (ptrace(PTRACE_GETREGSET, tid, reinterpret_cast<void*>(NT_PRSTATUS), &vector) == 0) {
          const auto* words = reinterpret_cast<const std::uint64_t*>(&registers);
          out.words.insert(out.words.end(), words, words + vector.iov_len / 8);
          ++out.threads_read;
        } else {
          unread(std::string("ptrace: ") + std::strerror(errno));
        }
        // A signal that stopped the thread on its way in (not tleak's interruption) is delivered
        // as it would have been.
        siginfo_t stopped_by{};
        int resend = 0;
        if (ptrace(PTRACE_GETSIGINFO, tid, nullptr, &stopped_by) == 0 &&
            stopped_by.si_code != (SIGTRAP | (PTRACE_EVENT_STOP << 8))) {
          resend = stopped_by.si_signo;
        }
        ptrace(PTRACE_DETACH, tid, nullptr, reinterpret_cast<void*>(static_cast<std::intptr_t>(resend)));
      }
      // Read, ended, or gone.
      seized[i] = seized.back();
      seized.pop_back();
    }
    if (seized.empty()) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      for (std::size_t i = 0; i < seized.size(); ++i) unread("not stopped within " + std::to_string(budget_ms) + " ms");
      break;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace

OtherThreadsRegisters read_other_threads_registers(pid_t pid, pid_t exiting_thread, int budget_ms) {
  OtherThreadsRegisters out;
  try {
    std::thread reader([&] { read_on_this_thread(pid, exiting_thread, budget_ms, out); });
    reader.join();
  } catch (const std::system_error& e) {  // no thread to be had (a limit on tleak's threads)
    out.threads_unread = static_cast<std::uint32_t>(threads_of(pid).size());
    if (out.threads_unread > 0 && exiting_thread > 0) --out.threads_unread;
    out.why_unread = std::string("no thread to read them on: ") + e.what();
  }
  return out;
}

}  // namespace tleak::diagnosis
