#include "descriptors.h"

#include <errno.h>

#include <atomic>

#include "next_symbol.h"

namespace tleak::agent::real {
namespace {

std::atomic<int (*)(int)> g_close{nullptr};
std::atomic<int (*)(unsigned, unsigned, int)> g_close_range{nullptr};
std::atomic<void (*)(int)> g_closefrom{nullptr};
std::atomic<int (*)(int, int)> g_dup2{nullptr};
std::atomic<int (*)(int, int, int)> g_dup3{nullptr};

int no_such_call() {
  errno = ENOSYS;
  return -1;
}

// Resolved before the program's own code runs.
__attribute__((constructor)) void find_descriptor_calls() {
  next_symbol(g_close, "close");
  next_symbol(g_close_range, "close_range");
  next_symbol(g_closefrom, "closefrom");
  next_symbol(g_dup2, "dup2");
  next_symbol(g_dup3, "dup3");
}

}  // namespace

int close(int fd) {
  const auto f = next_symbol(g_close, "close");
  return f != nullptr ? f(fd) : no_such_call();
}

int close_range(unsigned first, unsigned last, int flags) {
  const auto f = next_symbol(g_close_range, "close_range");
  return f != nullptr ? f(first, last, flags) : no_such_call();
}

void closefrom(int first) {
  if (const auto f = next_symbol(g_closefrom, "closefrom")) f(first);
}

int dup2(int from, int to) {
  const auto f = next_symbol(g_dup2, "dup2");
  return f != nullptr ? f(from, to) : no_such_call();
}

int dup3(int from, int to, int flags) {
  const auto f = next_symbol(g_dup3, "dup3");
  return f != nullptr ? f(from, to, flags) : no_such_call();
}

}  // namespace tleak::agent::real
