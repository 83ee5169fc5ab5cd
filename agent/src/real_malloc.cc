#include "real_malloc.h"

#include <dlfcn.h>
#include <errno.h>

#include <atomic>
#include <cstdint>
#include <cstring>

namespace tleak::agent::real {
namespace {

struct Table {
  void* (*malloc)(std::size_t);
  void (*free)(void*);
  void* (*calloc)(std::size_t, std::size_t);
  void* (*realloc)(void*, std::size_t);
  void* (*reallocarray)(void*, std::size_t, std::size_t);
  int (*posix_memalign)(void**, std::size_t, std::size_t);
  void* (*aligned_alloc)(std::size_t, std::size_t);
  void* (*memalign)(std::size_t, std::size_t);
  void* (*valloc)(std::size_t);
  void* (*pvalloc)(std::size_t);
};

Table g_table;
std::atomic<int> g_state{0};  // 0: not resolved, 1: resolving, 2: resolved
// Set on the one thread running dlsym: only its requests may come from the bootstrap buffer.
__thread bool t_resolving __attribute__((tls_model("initial-exec"))) = false;

// Requests made while dlsym runs: 16-byte aligned, never freed, each with its size in front.
alignas(16) unsigned char g_bootstrap[64 * 1024];
std::atomic<std::size_t> g_bootstrap_used{0};

void* bootstrap_alloc(std::size_t size) {
  const std::size_t need = ((size + 15) & ~std::size_t{15}) + 16;
  const std::size_t at = g_bootstrap_used.fetch_add(need);
  if (at + need > sizeof g_bootstrap) return nullptr;
  std::memcpy(g_bootstrap + at, &size, sizeof size);
  return g_bootstrap + at + 16;  // zeroed: static storage, never reused
}

template <class F>
void find(F& slot, const char* name) {
  slot = reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

void resolve() {
  int expected = 0;
  if (!g_state.compare_exchange_strong(expected, 1)) {
    while (g_state.load() != 2) {
    }
    return;
  }
  t_resolving = true;
  Table t{};
  find(t.malloc, "malloc");
  find(t.free, "free");
  find(t.calloc, "calloc");
  find(t.realloc, "realloc");
  find(t.reallocarray, "reallocarray");
  find(t.posix_memalign, "posix_memalign");
  find(t.aligned_alloc, "aligned_alloc");
  find(t.memalign, "memalign");
  find(t.valloc, "valloc");
  find(t.pvalloc, "pvalloc");
  g_table = t;
  t_resolving = false;
  g_state.store(2);
}

bool resolving() { return t_resolving; }
const Table& table() {
  if (g_state.load(std::memory_order_acquire) != 2) resolve();
  return g_table;
}

}  // namespace

const void* malloc_function() { return reinterpret_cast<const void*>(table().malloc); }

bool is_bootstrap(const void* ptr) {
  const auto* p = static_cast<const unsigned char*>(ptr);
  return p >= g_bootstrap && p < g_bootstrap + sizeof g_bootstrap;
}

void* malloc(std::size_t size) {
  if (resolving()) return bootstrap_alloc(size);
  return table().malloc(size);
}

void free(void* ptr) {
  if (ptr == nullptr || is_bootstrap(ptr)) return;
  table().free(ptr);
}

void* calloc(std::size_t count, std::size_t size) {
  if (resolving()) {
    if (size != 0 && count > SIZE_MAX / size) return nullptr;
    return bootstrap_alloc(count * size);
  }
  return table().calloc(count, size);
}

void* realloc(void* ptr, std::size_t size) {
  if (is_bootstrap(ptr)) {
    std::size_t old = 0;
    std::memcpy(&old, static_cast<unsigned char*>(ptr) - 16, sizeof old);
    void* fresh = malloc(size);
    if (fresh != nullptr) std::memcpy(fresh, ptr, old < size ? old : size);
    return fresh;
  }
  if (resolving()) return bootstrap_alloc(size);
  return table().realloc(ptr, size);
}

void* reallocarray(void* ptr, std::size_t count, std::size_t size) {
  const Table& t = table();
  if (t.reallocarray != nullptr && !is_bootstrap(ptr)) return t.reallocarray(ptr, count, size);
  if (size != 0 && count > SIZE_MAX / size) {
    errno = ENOMEM;
    return nullptr;
  }
  return realloc(ptr, count * size);
}

int posix_memalign(void** out, std::size_t alignment, std::size_t size) {
  return table().posix_memalign(out, alignment, size);
}
void* aligned_alloc(std::size_t alignment, std::size_t size) { return table().aligned_alloc(alignment, size); }
void* memalign(std::size_t alignment, std::size_t size) { return table().memalign(alignment, size); }
void* valloc(std::size_t size) { return table().valloc(size); }
void* pvalloc(std::size_t size) { return table().pvalloc(size); }

}  // namespace tleak::agent::real
