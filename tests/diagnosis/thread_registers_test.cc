#include "thread_registers.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

namespace {

using tleak::diagnosis::OtherThreadsRegisters;
using tleak::diagnosis::read_other_threads_registers;
using tleak::diagnosis::StoppedThreads;

constexpr std::uint64_t kHeldValue = 0x5eedc0de12345678;

// What the child's threads share with the test, in memory both map.
struct Shared {
  std::atomic<int> ready{0};
  std::atomic<std::uint64_t> spins{0};
  std::atomic<int> held_read_returned{0};
  std::atomic<int> after_vfork{0};
  std::atomic<int> call_returned{0};  // the extra thread's call ended
};

struct ChildArgs {
  Shared* shared;
  int block_fd;
};

void* hold_in_register(void* arg) {
  const auto* a = static_cast<const ChildArgs*>(arg);
  register std::uint64_t held __asm__("r12") = kHeldValue;
  long result = SYS_read;
  char byte;
  a->shared->ready.fetch_add(1);
  __asm__ volatile("syscall" : "+a"(result) : "D"(static_cast<long>(a->block_fd)), "S"(&byte), "d"(1L), "r"(held)
                   : "rcx", "r11", "memory");
  a->shared->held_read_returned.store(1);
  return nullptr;
}

void* spin(void* arg) {
  auto* shared = static_cast<const ChildArgs*>(arg)->shared;
  shared->ready.fetch_add(1);
  for (;;) shared->spins.fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}

// Waits for a vfork child that sleeps: a wait no stop interrupts until the child is gone.
void* in_vfork(void* arg) {
  auto* shared = static_cast<const ChildArgs*>(arg)->shared;
  shared->ready.fetch_add(1);
  if (vfork() == 0) {
    const timespec wait{0, 600'000'000};
    syscall(SYS_nanosleep, &wait, nullptr);
    _exit(0);
  }
  shared->after_vfork.store(1);
  return nullptr;
}

// Waits in epoll_wait, which Linux ends with EINTR after any stop.
void* in_epoll_wait(void* arg) {
  const auto* a = static_cast<const ChildArgs*>(arg);
  const int e = epoll_create1(0);
  epoll_event event{};
  event.events = EPOLLIN;
  epoll_ctl(e, EPOLL_CTL_ADD, a->block_fd, &event);
  a->shared->ready.fetch_add(1);
  epoll_wait(e, &event, 1, 10'000);
  a->shared->call_returned.store(1);
  return nullptr;
}

// Waits in connect (a Unix socket's listener with its backlog full), which cannot run again.
void* in_connect(void* arg) {
  auto* shared = static_cast<const ChildArgs*>(arg)->shared;
  sockaddr_un at{};
  at.sun_family = AF_UNIX;
  const std::string name = "tleak-thread-registers-" + std::to_string(getpid());
  std::memcpy(at.sun_path + 1, name.data(), name.size());
  const int listener = socket(AF_UNIX, SOCK_STREAM, 0);
  const int filler = socket(AF_UNIX, SOCK_STREAM, 0);
  const int waiting = socket(AF_UNIX, SOCK_STREAM, 0);
  const auto* address = reinterpret_cast<const sockaddr*>(&at);
  if (bind(listener, address, sizeof at) != 0 || listen(listener, 0) != 0 || connect(filler, address, sizeof at) != 0) {
    return nullptr;
  }
  shared->ready.fetch_add(1);
  connect(waiting, address, sizeof at);
  shared->call_returned.store(1);
  return nullptr;
}

// A process whose main thread waits on `control` (its byte: exit), with the threads asked for
// (`extra`, if not null, a third). Exits 0, or 3 if the thread holding its register saw its read
// end.
pid_t start_child(Shared* shared, int control, int block_fd, void* (*extra)(void*)) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  static ChildArgs args;
  args = {shared, block_fd};
  pthread_t t;
  pthread_create(&t, nullptr, hold_in_register, &args);
  pthread_create(&t, nullptr, spin, &args);
  if (extra != nullptr) pthread_create(&t, nullptr, extra, &args);
  char byte;
  while (read(control, &byte, 1) < 0) {
  }
  _exit(shared->held_read_returned.load() != 0 ? 3 : 0);
}

// Whether any thread of `pid` is traced (its status's TracerPid).
bool any_thread_traced(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return false;
  bool traced = false;
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream status(dir + "/" + e->d_name + "/status");
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("TracerPid:", 0) == 0) traced = traced || std::stol(line.substr(10)) != 0;
    }
  }
  closedir(d);
  return traced;
}

class ThreadRegisters : public ::testing::Test {
 protected:
  void SetUp() override {
    shared_ = static_cast<Shared*>(
        mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(shared_, MAP_FAILED);
    new (shared_) Shared();
    ASSERT_EQ(pipe(control_), 0);
    ASSERT_EQ(pipe(block_), 0);
  }
  void TearDown() override {
    for (const int fd : {control_[0], control_[1], block_[0], block_[1]}) close(fd);
    munmap(shared_, sizeof(Shared));
  }
  pid_t start(void* (*extra)(void*) = nullptr) {
    const pid_t pid = start_child(shared_, control_[0], block_[0], extra);
    const int threads = extra != nullptr ? 3 : 2;
    while (shared_->ready.load() < threads) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // each into its wait
    return pid;
  }
  // The spinning thread goes on.
  void expect_running() const {
    const std::uint64_t before = shared_->spins.load();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_GT(shared_->spins.load(), before);
  }
  // Asks the child to exit; its status (tleak reaped none).
  int end(pid_t pid) const {
    EXPECT_EQ(write(control_[1], "x", 1), 1);
    int status = 0;
    EXPECT_EQ(waitpid(pid, &status, 0), pid);
    return status;
  }
  Shared* shared_ = nullptr;
  int control_[2] = {-1, -1}, block_[2] = {-1, -1};
};

// Every thread but the one named is read, a register's value among the words, and each is let go
// as it was: the blocked read goes on waiting, the spinning thread spins, none is left traced, and
// the process ends as it would have.
TEST_F(ThreadRegisters, EachOtherThreadIsReadAndLetGo) {
  const pid_t pid = start();
  const OtherThreadsRegisters r = read_other_threads_registers(pid, pid);
  EXPECT_EQ(r.threads_read, 2u);
  EXPECT_EQ(r.threads_unread, 0u) << r.why_unread;
  EXPECT_NE(std::find(r.words.begin(), r.words.end(), kHeldValue), r.words.end());
  EXPECT_FALSE(any_thread_traced(pid));
  expect_running();
  const int status = end(pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;  // 3: the held read ended
}

// Held for a scan: the threads read stay stopped (the spinning thread spins no more) until
// released, and then go on as they were, none left traced.
TEST_F(ThreadRegisters, ThreadsStayStoppedUntilReleased) {
  const pid_t pid = start();
  StoppedThreads stopped(pid, pid, 500, 10'000);
  EXPECT_EQ(stopped.registers().threads_read, 2u);
  EXPECT_EQ(stopped.registers().threads_unread, 0u) << stopped.registers().why_unread;
  const std::uint64_t held_at = shared_->spins.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(shared_->spins.load(), held_at);
  EXPECT_TRUE(any_thread_traced(pid));
  stopped.release();
  EXPECT_FALSE(stopped.hold_ran_out());
  EXPECT_FALSE(any_thread_traced(pid));
  expect_running();
  const int status = end(pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

// Never released (what the scan waits for was held by a stopped thread), the threads go on when
// the hold's time is up.
TEST_F(ThreadRegisters, HeldThreadsGoOnWhenTheHoldsTimeIsUp) {
  const pid_t pid = start();
  StoppedThreads stopped(pid, pid, 500, 100);
  EXPECT_EQ(stopped.registers().threads_read, 2u);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(any_thread_traced(pid));
  expect_running();
  stopped.release();
  EXPECT_TRUE(stopped.hold_ran_out());
  const int status = end(pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

// A thread that does not stop in time (waiting for its vfork child, which no stop interrupts) is
// let go unread when the time is up, and goes on as it would have once its child is gone.
TEST_F(ThreadRegisters, AThreadThatDoesNotStopInTimeIsLetGo) {
  const pid_t pid = start(in_vfork);
  const auto began = std::chrono::steady_clock::now();
  const OtherThreadsRegisters r = read_other_threads_registers(pid, pid, 100);
  EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::milliseconds(500));
  EXPECT_EQ(r.threads_read, 2u);
  EXPECT_EQ(r.threads_unread, 1u);
  EXPECT_EQ(r.why_unread, "not stopped within 100 ms");
  EXPECT_FALSE(any_thread_traced(pid));
  expect_running();
  for (int i = 0; i < 200 && shared_->after_vfork.load() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(shared_->after_vfork.load(), 1);
  const int status = end(pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

// A thread in a call Linux ends with EINTR after any stop (epoll_wait) is read, and its call set
// to run again: it goes on waiting.
TEST_F(ThreadRegisters, ACallAStopWouldEndRunsAgain) {
  const pid_t pid = start(in_epoll_wait);
  const OtherThreadsRegisters r = read_other_threads_registers(pid, pid);
  EXPECT_EQ(r.threads_read, 3u);
  EXPECT_EQ(r.threads_unread, 0u) << r.why_unread;
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(shared_->call_returned.load(), 0);
  EXPECT_FALSE(any_thread_traced(pid));
  const int status = end(pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

// A thread in connect, which a stop would end for good, is not stopped.
TEST_F(ThreadRegisters, AThreadInConnectIsLeftAlone) {
  const pid_t pid = start(in_connect);
  const OtherThreadsRegisters r = read_other_threads_registers(pid, pid);
  EXPECT_EQ(r.threads_read, 2u);
  EXPECT_EQ(r.threads_unread, 1u);
  EXPECT_EQ(r.why_unread, "blocked in connect, which a stop would end with EINTR");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(shared_->call_returned.load(), 0);
  const int status = end(pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

// With no exiting thread named, every thread is read, the main thread too (named, as above, it is
// left to the caller: two read of the same three).
TEST_F(ThreadRegisters, WithNoThreadNamedEveryThreadIsRead) {
  const pid_t pid = start();
  const OtherThreadsRegisters all = read_other_threads_registers(pid, 0);
  EXPECT_EQ(all.threads_read, 3u);  // the main thread too
  const int status = end(pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

}  // namespace
