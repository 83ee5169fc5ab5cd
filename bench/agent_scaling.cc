// How the agent's allocation path scales with threads, apart from tleak's parent: runs
// bench/programs/malloc_heavy with 1 and 2 threads under libtleak_preload.so, its stream read and
// thrown away by this program (what the parent would do instantly), and prints each run's pairs
// per second and the 2-thread / 1-thread ratio. The same ratio under the whole `tleak run` is
// printed by bench/compare_program_overhead.
//
//   build/release/bench/agent_scaling [rounds per thread, default 1000000]
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "tleak/agent/protocol.h"

namespace {

double run(const std::string& agent, const std::string& program, int threads, long rounds) {
  int sockets[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sockets) != 0) std::exit(1);
  const int control = static_cast<int>(syscall(SYS_memfd_create, "control", 0));
  if (control < 0 || ftruncate(control, 4096) != 0) std::exit(1);
  auto* page = static_cast<tleak::agent::ControlPage*>(mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, control, 0));
  page->magic = tleak::agent::kProtocolMagic;
  // The exit scan's live list, sent ahead: empty, so the agent scans nothing and ends at once.
  const tleak::agent::LiveListHeader empty{tleak::agent::kProtocolMagic, 0, 0};
  if (send(sockets[0], &empty, sizeof empty, 0) != static_cast<ssize_t>(sizeof empty)) std::exit(1);
  const auto started = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    close(sockets[0]);
    const int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, STDOUT_FILENO);
    const std::string pid_text = std::to_string(getpid());
    setenv("LD_PRELOAD", agent.c_str(), 1);
    setenv(tleak::agent::kEnvStreamFd, std::to_string(sockets[1]).c_str(), 1);
    setenv(tleak::agent::kEnvControlFd, std::to_string(control).c_str(), 1);
    setenv(tleak::agent::kEnvPid, pid_text.c_str(), 1);
    const std::string t = std::to_string(threads), r = std::to_string(rounds);
    execl(program.c_str(), program.c_str(), t.c_str(), r.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(sockets[1]);
  std::thread reader([&] {
    std::vector<char> buffer(1 << 20);
    while (recv(sockets[0], buffer.data(), buffer.size(), 0) > 0) {
    }
  });
  int status = 0;
  waitpid(pid, &status, 0);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  shutdown(sockets[0], SHUT_RDWR);
  reader.join();
  close(sockets[0]);
  close(control);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) std::exit(1);
  return static_cast<double>(threads) * static_cast<double>(rounds) / seconds;
}

}  // namespace

int main(int argc, char** argv) {
  const long rounds = argc > 1 ? std::atol(argv[1]) : 1000000;
  const std::string agent = TLEAK_AGENT_PATH, program = TLEAK_MALLOC_HEAVY;
  double best[3] = {0, 0, 0};
  for (int repeat = 0; repeat < 3; ++repeat) {
    for (int threads = 1; threads <= 2; ++threads) best[threads] = std::max(best[threads], run(agent, program, threads, rounds));
  }
  std::printf("agent alone, 12 frames: 1 thread %.2f M pairs/s, 2 threads %.2f M pairs/s, ratio %.2f (best of 3)\n",
              best[1] / 1e6, best[2] / 1e6, best[2] / best[1]);
  return 0;
}
