// What the agent alone costs a program, apart from tleak's parent: runs a program under
// libtleak_preload.so with its stream read and thrown away by this program (what an infinitely
// fast parent would do), and plain.
//
//   build/release/bench/agent_scaling [--socket-buffer BYTES] [--blocking-reader] [rounds per thread, default 1000000]
//     bench/programs/malloc_heavy with 1 and 2 threads: each run's pairs per second and the
//     2-thread / 1-thread ratio (best of 3). The same ratio under the whole `tleak run` is printed
//     by bench/compare_program_overhead.
//   build/release/bench/agent_scaling [--socket-buffer BYTES] [--blocking-reader] -- COMMAND [ARGS...]
//     COMMAND plain and under the agent alone (12 frames): each one's seconds and the ratio
//     (medians of 3). Against `tleak run`'s time, the rest is what tleak's parent adds.
//   The stream is read as tleak reads it (read_pacing.h) with the socket buffer tleak asks for;
//   --socket-buffer asks for another size (212992: Debian's default net.core.wmem_max) and
//   --blocking-reader waits on the socket after every read instead of pacing.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "message_slot_area.h"
#include "read_pacing.h"
#include "tleak/agent/protocol.h"

namespace {

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "agent_scaling: %s: %s\n", what, std::strerror(errno));
  std::exit(2);
}

void exec_command(const std::vector<std::string>& command) {
  const int null = open("/dev/null", O_WRONLY);
  if (null >= 0) dup2(null, STDOUT_FILENO);
  std::vector<char*> argv;
  for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  _exit(127);
}

void expect_success(int status, const std::vector<std::string>& command) {
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "agent_scaling: %s failed\n", command[0].c_str());
    std::exit(2);
  }
}

// Wall seconds of `command` with nothing preloaded.
double run_plain(const std::vector<std::string>& command) {
  const auto started = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) fail("fork");
  if (pid == 0) exec_command(command);
  int status = 0;
  waitpid(pid, &status, 0);
  expect_success(status, command);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

// How the stream is read: as tleak reads it, unless the options say otherwise.
struct Reader {
  int socket_buffer_bytes = 8 << 20;  // what tleak asks for
  bool blocking = false;              // wait on the socket after every read (no pacing)
};

// Wall seconds of `command` under the agent, its stream drained and dropped.
double run_under_agent(const std::string& agent, const std::vector<std::string>& command, const Reader& how) {
  int sockets[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sockets) != 0) fail("socketpair");
  const std::size_t granted_bytes = tleak::diagnosis::set_send_buffer(sockets[1], how.socket_buffer_bytes);
  const int control = static_cast<int>(syscall(SYS_memfd_create, "control", 0));
  if (control < 0 || ftruncate(control, 4096) != 0) fail("memfd_create");
  void* mapped = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, control, 0);
  if (mapped == MAP_FAILED) fail("mmap");
  static_cast<tleak::agent::ControlPage*>(mapped)->magic = tleak::agent::kProtocolMagic;
  // The message slots, as tleak gives them: the thread buffers' records are written there, and a
  // slot is freed as soon as its record arrives.
  tleak::diagnosis::MessageSlotArea slot_area;
  if (slot_area.fd() < 0) fail("memfd_create");
  // The exit scan's live list, sent ahead: empty, so the agent scans nothing and ends at once.
  const tleak::agent::LiveListHeader empty{tleak::agent::kProtocolMagic, 0, 0, 0, 0};
  if (send(sockets[0], &empty, sizeof empty, 0) != static_cast<ssize_t>(sizeof empty)) fail("send");
  const auto started = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) fail("fork");
  if (pid == 0) {
    close(sockets[0]);
    setenv("LD_PRELOAD", agent.c_str(), 1);
    setenv(tleak::agent::kEnvStreamFd, std::to_string(sockets[1]).c_str(), 1);
    setenv(tleak::agent::kEnvControlFd, std::to_string(control).c_str(), 1);
    fcntl(slot_area.fd(), F_SETFD, 0);
    setenv(tleak::agent::kEnvSlotsFd, std::to_string(slot_area.fd()).c_str(), 1);
    setenv(tleak::agent::kEnvPid, std::to_string(getpid()).c_str(), 1);
    setenv(tleak::agent::kEnvStackDepth, "12", 1);
    exec_command(command);
  }
  close(sockets[1]);
  // Read as tleak's parent reads (read_pacing.h): a reader blocked on the socket would be woken by
  // every message, a cost tleak does not have.
  std::thread reader([&] {
    std::vector<char> buffer(1 << 20);
    tleak::diagnosis::ReadPacing pacing(granted_bytes);
    for (;;) {
      std::size_t bytes = 0;
      ssize_t got = 0;
      while ((got = recv(sockets[0], buffer.data(), buffer.size(), MSG_DONTWAIT)) > 0) {
        const std::span<const unsigned char> message{reinterpret_cast<const unsigned char*>(buffer.data()),
                                                     static_cast<std::size_t>(got)};
        // The exit scan's answer is one message here (the live list is empty): never in pieces.
        if (const auto named = slot_area.named_by(message)) {
          bytes += named->records.size();
          slot_area.release(named->slot);
        } else {
          bytes += message.size();
        }
      }
      if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) return;  // closed
      const std::uint64_t pause = how.blocking ? 0 : pacing.pause_after(bytes, tleak::diagnosis::ReadPacing::now_ns());
      if (pause > 0) {
        tleak::diagnosis::ReadPacing::sleep(pause);
      } else {
        pollfd readable{sockets[0], POLLIN, 0};
        poll(&readable, 1, -1);
      }
    }
  });
  int status = 0;
  waitpid(pid, &status, 0);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  shutdown(sockets[0], SHUT_RDWR);
  reader.join();
  close(sockets[0]);
  munmap(mapped, 4096);
  close(control);
  expect_success(status, command);
  return seconds;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const std::string agent = TLEAK_AGENT_PATH;
  Reader how;
  int first = 1;
  for (; first < argc; ++first) {
    if (std::strcmp(argv[first], "--blocking-reader") == 0) {
      how.blocking = true;
    } else if (std::strcmp(argv[first], "--socket-buffer") == 0 && first + 1 < argc) {
      char* end = nullptr;
      const long bytes = std::strtol(argv[++first], &end, 10);
      if (*end != '\0' || bytes < 4096 || bytes > (64 << 20)) {
        std::fprintf(stderr, "agent_scaling: --socket-buffer must be 4096 to 67108864 bytes\n");
        return 2;
      }
      how.socket_buffer_bytes = static_cast<int>(bytes);
    } else {
      break;
    }
  }
  if (argc - first > 1 && std::strcmp(argv[first], "--") == 0) {
    const std::vector<std::string> command(argv + first + 1, argv + argc);
    std::vector<double> plain, alone;
    for (int repeat = 0; repeat < 3; ++repeat) {
      plain.push_back(run_plain(command));
      alone.push_back(run_under_agent(agent, command, how));
    }
    std::printf("plain %.3f s, agent alone (12 frames) %.3f s, ratio %.2f (medians of 3)\n", median(plain),
                median(alone), median(alone) / median(plain));
    return 0;
  }
  const long rounds = argc > first ? std::atol(argv[first]) : 1000000;
  if (rounds <= 0 || rounds > 1'000'000'000) {
    std::fprintf(stderr, "agent_scaling: rounds must be 1 to 1000000000\n");
    return 2;
  }
  double best[3] = {0, 0, 0};
  for (int repeat = 0; repeat < 3; ++repeat) {
    for (int threads = 1; threads <= 2; ++threads) {
      const std::vector<std::string> command = {TLEAK_MALLOC_HEAVY, std::to_string(threads), std::to_string(rounds)};
      const double pairs = static_cast<double>(threads) * static_cast<double>(rounds);
      best[threads] = std::max(best[threads], pairs / run_under_agent(agent, command, how));
    }
  }
  std::printf("agent alone, 12 frames: 1 thread %.2f M pairs/s, 2 threads %.2f M pairs/s, ratio %.2f (best of 3)\n",
              best[1] / 1e6, best[2] / 1e6, best[2] / best[1]);
  return 0;
}
