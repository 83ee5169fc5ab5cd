#include "new_counter.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<std::uint64_t> g_calls{0};
}

namespace tleak::testing {
std::uint64_t operator_new_calls() { return g_calls.load(std::memory_order_relaxed); }
}  // namespace tleak::testing

void* operator new(std::size_t size) {
  g_calls.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
