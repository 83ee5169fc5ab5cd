#include "allocator_regions.h"

#include <pthread.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>

#include "code_range.h"
#include "tleak/detail/spin_lock.h"

namespace tleak::agent {
namespace {

struct Mapping {
  std::uintptr_t start;
  std::uintptr_t end;
  std::uintptr_t caller;
};

enum Mode : int { kEveryCaller = 0, kAllocatorOnly = 1, kOff = 2 };

// A preloaded malloc maps a few dozen regions (jemalloc grows its reservations geometrically);
// before the start, a program's constructors may map some of their own.
constexpr int kMaxMappings = kMaxAllocatorRegions;
Mapping g_mappings[kMaxMappings];
int g_count = 0;
detail::SpinLock g_lock;
std::atomic<int> g_mode{kEveryCaller};
// The code of the object that defines the program's malloc.
CodeRange g_code;
// Set while this thread holds g_lock: a signal handler's mmap on it passes over, never waits.
__thread bool t_holding __attribute__((tls_model("initial-exec"))) = false;

bool wanted(std::uintptr_t caller) {
  const int mode = g_mode.load(std::memory_order_acquire);
  if (mode == kOff) return false;
  return mode == kEveryCaller || g_code.holds(reinterpret_cast<const void*>(caller));
}

// Runs `body` under the lock unless this thread holds it already (a handler interrupted it).
template <class Body>
void locked(Body body) {
  if (t_holding) return;
  t_holding = true;
  g_lock.lock();
  body();
  g_lock.unlock();
  t_holding = false;
}

// The end of a mapping of `length` bytes at `at`: the kernel maps whole pages.
std::uintptr_t pages_end(std::uintptr_t at, std::size_t length) { return at + ((length + 4095) & ~std::size_t{4095}); }

void add(std::uintptr_t start, std::uintptr_t end, std::uintptr_t caller) {
  if (g_count < kMaxMappings) g_mappings[g_count++] = {start, end, caller};
}

// Cuts [start, end) out of every mapping; returns the caller of the first one it cut (0: none).
std::uintptr_t cut(std::uintptr_t start, std::uintptr_t end) {
  std::uintptr_t caller = 0;
  for (int i = 0; i < g_count;) {
    Mapping& m = g_mappings[i];
    if (m.end <= start || m.start >= end) {
      ++i;
      continue;
    }
    if (caller == 0) caller = m.caller;
    const Mapping whole = m;
    g_mappings[i] = g_mappings[--g_count];  // looked at again below if pieces remain
    if (whole.start < start) add(whole.start, start, whole.caller);
    if (whole.end > end) add(end, whole.end, whole.caller);
  }
  return caller;
}

// In a forked child: not recorded (README, "fork"), and a thread that held the lock as the
// process forked does not exist there. Not taken before the fork: the malloc's own fork handler
// takes its locks then, and a thread inside the malloc waiting here for ours would hold one.
void after_fork_in_child() {
  g_mode.store(kOff, std::memory_order_release);
  g_lock.unlock();
  t_holding = false;
}

}  // namespace

void allocator_mapped(const void* start, std::size_t length, int flags, const void* caller) {
  if ((flags & MAP_ANONYMOUS) == 0 || (flags & MAP_SHARED) != 0 || length == 0) return;
  const auto from = reinterpret_cast<std::uintptr_t>(caller);
  if (!wanted(from)) return;
  const auto at = reinterpret_cast<std::uintptr_t>(start);
  const std::uintptr_t end = pages_end(at, length);
  // A mapping put over others (MAP_FIXED) replaces them.
  locked([&] {
    cut(at, end);
    add(at, end, from);
  });
}

void allocator_unmapped(const void* start, std::size_t length) {
  if (g_mode.load(std::memory_order_acquire) == kOff || length == 0) return;
  const auto at = reinterpret_cast<std::uintptr_t>(start);
  locked([&] { cut(at, pages_end(at, length)); });
}

void allocator_remapped(const void* old_start, std::size_t old_length, const void* start, std::size_t length) {
  if (g_mode.load(std::memory_order_acquire) == kOff) return;
  const auto old_at = reinterpret_cast<std::uintptr_t>(old_start);
  const auto at = reinterpret_cast<std::uintptr_t>(start);
  locked([&] {
    const std::uintptr_t caller = cut(old_at, pages_end(old_at, old_length));
    if (caller != 0 && length > 0) add(at, pages_end(at, length), caller);
  });
}

void allocator_regions_start(const CodeRange& code) {
  if (code.end == 0 || code.is_c_library) {
    allocator_regions_stop();
    return;
  }
  pthread_atfork(nullptr, nullptr, after_fork_in_child);
  locked([&] {
    g_code = code;
    g_mode.store(kAllocatorOnly, std::memory_order_release);
    // What the program's other code mapped before the start is not the allocator's.
    for (int i = 0; i < g_count;) {
      if (g_code.holds(reinterpret_cast<const void*>(g_mappings[i].caller))) {
        ++i;
      } else {
        g_mappings[i] = g_mappings[--g_count];
      }
    }
  });
}

bool allocator_code_holds(const void* function) {
  return g_mode.load(std::memory_order_acquire) == kAllocatorOnly && g_code.holds(function);
}

void allocator_regions_stop() {
  // Without the lock: in a forked child, a thread that held it no longer exists.
  g_mode.store(kOff, std::memory_order_release);
}

int allocator_regions(OwnRegion* out, int max) {
  if (g_mode.load(std::memory_order_acquire) != kAllocatorOnly) return 0;
  int n = 0;
  locked([&] {
    for (; n < g_count && n < max; ++n) out[n] = {g_mappings[n].start, g_mappings[n].end};
  });
  std::sort(out, out + n, [](const OwnRegion& a, const OwnRegion& b) { return a.start < b.start; });
  return n;
}

}  // namespace tleak::agent
