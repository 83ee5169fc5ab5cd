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
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <system_error>
#include <thread>

namespace tleak::diagnosis {
namespace {

// Calls that Linux ends with EINTR after any stop of the thread, not only after a signal handler
// ran (signal(7), "Interruption of system calls and library functions by stop signals"): socket
// calls only with a timeout set on the socket. Each returns EINTR only when it did nothing, so it
// can run again from the start, as the kernel restarts the others (restart_ended_call).
bool restartable_after_a_stop(long call) {
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

// Calls a stop ends that cannot simply run again: an interrupted connect goes on connecting (run
// again, it fails with EALREADY), and io_uring_enter may have taken submissions before it waited.
// A thread blocked in one is not stopped. Where tleak cannot restart a call (restart_ended_call:
// x86-64 only), none of the calls above is stopped either.
// Why a thread blocked in `call` is left alone: the call's name, or empty to stop the thread.
std::string leave_alone_in(long call) {
#ifdef SYS_connect
  if (call == SYS_connect) return "connect";
#endif
#ifdef SYS_io_uring_enter
  if (call == SYS_io_uring_enter) return "io_uring_enter";
#endif
#if defined(__x86_64__)
  return {};
#else
  return restartable_after_a_stop(call) ? "a call" : "";
#endif
}

// A small /proc file of the thread (stat, syscall, status), read whole; empty if it cannot be.
std::string read_thread_file(pid_t pid, pid_t tid, const char* name) {
  const std::string path = "/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/" + name;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  char buffer[4096];
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

// The call to leave the thread alone in that it is blocked in (/proc's "syscall": its number
// first, or "running", or -1 when it waits outside any call), or empty.
std::string call_to_leave_alone(pid_t pid, pid_t tid) {
  const std::string call = read_thread_file(pid, tid, "syscall");
  if (call.empty() || call.compare(0, 7, "running") == 0) return {};
  return leave_alone_in(std::strtol(call.c_str(), nullptr, 10));
}

// A mask of signals from a /proc status line ("SigPnd:\t0000000000000200").
std::uint64_t signal_mask(const std::string& status, const char* field) {
  const auto at = status.find(field);
  if (at == std::string::npos) return 0;
  return std::strtoull(status.c_str() + at + std::strlen(field), nullptr, 16);
}

// Whether a signal the thread does not block is pending for it or its process: a call it was in
// ended with EINTR for that signal's sake too, and the program sees that as it would have. (Unread,
// it counts as pending: the call is left as it ended.)
bool signal_pending(pid_t pid, pid_t tid) {
  const std::string status = read_thread_file(pid, tid, "status");
  if (status.empty()) return true;
  const std::uint64_t pending = signal_mask(status, "SigPnd:") | signal_mask(status, "ShdPnd:");
  return (pending & ~signal_mask(status, "SigBlk:")) != 0;
}

// At tleak's own stop, a call that Linux ended with EINTR for that stop alone (the calls of
// restartable_after_a_stop; no signal pending) is set to run again from the start, as the kernel
// restarts every other call after a stop: rax back to the call's number, rip back over the
// two-byte `syscall` that made it. Its timeout runs again in full: the thread waits longer, as
// after any restart of a call whose timeout the kernel does not keep. (Before, such a thread was
// not stopped; one that entered such a call between tleak's look at it and its stop saw EINTR.)
void restart_ended_call(pid_t pid, pid_t tid, user_regs_struct registers) {
#if defined(__x86_64__)
  const auto call = static_cast<long>(registers.orig_rax);
  if (call < 0 || static_cast<long>(registers.rax) != -EINTR || !restartable_after_a_stop(call)) return;
  if (signal_pending(pid, tid)) return;
  errno = 0;
  const long code = ptrace(PTRACE_PEEKTEXT, tid, reinterpret_cast<void*>(registers.rip - 2), nullptr);
  if (errno != 0 || (code & 0xffff) != 0x050f) return;  // not after a `syscall` (0f 05)
  registers.rax = registers.orig_rax;
  registers.rip -= 2;
  iovec vector{&registers, sizeof registers};
  ptrace(PTRACE_SETREGSET, tid, reinterpret_cast<void*>(NT_PRSTATUS), &vector);
#else
  (void)pid, (void)tid, (void)registers;
#endif
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

struct HeldThread {
  pid_t tid;
  int resend;  // the signal its stop held back, passed on as it goes
};

// Every step with the traced threads, on one thread of tleak's that ends when they are let go: the
// kernel lets go of whatever a tracer that ends still traces (a thread that never stopped in time
// included), so none is left stopped or traced whatever happens here. With `held` not null, a
// thread read is left stopped and noted there, for this same thread to let go later.
void read_on_this_thread(pid_t pid, pid_t exiting_thread, int budget_ms, OtherThreadsRegisters& out,
                         std::vector<HeldThread>* held) {
  const auto unread = [&out](const std::string& why) {
    ++out.threads_unread;
    if (out.why_unread.empty()) out.why_unread = why;
  };
  std::vector<pid_t> seized;
  for (const pid_t tid : threads_of(pid)) {
    if (tid == exiting_thread || ended(pid, tid)) continue;
    if (const std::string call = call_to_leave_alone(pid, tid); !call.empty()) {
      unread("blocked in " + call + ", which a stop would end with EINTR");
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
        // tleak's interruption, a group stop (the program was stopped), or a signal on its way in,
        // which is delivered as it would have been.
        siginfo_t stopped_by{};
        const bool with_info = ptrace(PTRACE_GETSIGINFO, tid, nullptr, &stopped_by) == 0;
        const bool event_stop = !with_info || (stopped_by.si_code >> 8) == PTRACE_EVENT_STOP;
        const bool interrupted = with_info && stopped_by.si_code == (SIGTRAP | (PTRACE_EVENT_STOP << 8));
        user_regs_struct registers{};
        iovec vector{&registers, sizeof registers};
        if (ptrace(PTRACE_GETREGSET, tid, reinterpret_cast<void*>(NT_PRSTATUS), &vector) == 0) {
          const auto* words = reinterpret_cast<const std::uint64_t*>(&registers);
          out.words.insert(out.words.end(), words, words + vector.iov_len / 8);
          ++out.threads_read;
#if defined(__x86_64__)
          if (vector.iov_len == sizeof registers) out.stacks.push_back({registers.rsp, registers.fs_base});
#endif
          if (interrupted && vector.iov_len == sizeof registers) restart_ended_call(pid, tid, registers);
        } else {
          unread(std::string("ptrace: ") + std::strerror(errno));
        }
        const int resend = event_stop ? 0 : stopped_by.si_signo;
        if (held != nullptr) {
          held->push_back({tid, resend});
        } else {
          ptrace(PTRACE_DETACH, tid, nullptr, reinterpret_cast<void*>(static_cast<std::intptr_t>(resend)));
        }
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

StoppedThreads::StoppedThreads(pid_t pid, pid_t exiting_thread, int budget_ms, int hold_ms) {
  try {
    holder_ = std::thread([this, pid, exiting_thread, budget_ms, hold_ms] {
      std::vector<HeldThread> held;
      read_on_this_thread(pid, exiting_thread, budget_ms, registers_, hold_ms > 0 ? &held : nullptr);
      {
        std::unique_lock lock(mutex_);
        read_ = true;
        changed_.notify_all();
        changed_.wait_for(lock, std::chrono::milliseconds(hold_ms), [this] { return released_; });
        hold_ran_out_ = !held.empty() && !released_;
      }
      for (const HeldThread& h : held) {
        ptrace(PTRACE_DETACH, h.tid, nullptr, reinterpret_cast<void*>(static_cast<std::intptr_t>(h.resend)));
      }
      // Ending, this thread lets go of any thread it still traces (one gone meanwhile included).
    });
  } catch (const std::system_error& e) {  // no thread to be had (a limit on tleak's threads)
    registers_.threads_unread = static_cast<std::uint32_t>(threads_of(pid).size());
    if (registers_.threads_unread > 0 && exiting_thread > 0) --registers_.threads_unread;
    registers_.why_unread = std::string("no thread to read them on: ") + e.what();
    return;
  }
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return read_; });
}

StoppedThreads::~StoppedThreads() { release(); }

bool StoppedThreads::hold_ran_out() {
  std::lock_guard lock(mutex_);
  return hold_ran_out_;
}

void StoppedThreads::release() {
  if (!holder_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    released_ = true;
  }
  changed_.notify_all();
  holder_.join();
}

OtherThreadsRegisters read_other_threads_registers(pid_t pid, pid_t exiting_thread, int budget_ms) {
  StoppedThreads stopped(pid, exiting_thread, budget_ms, 0);
  stopped.release();
  return std::move(stopped.registers());
}

}  // namespace tleak::diagnosis
