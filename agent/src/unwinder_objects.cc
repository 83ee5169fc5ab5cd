#include "unwinder_objects.h"

#include <atomic>
#include <cstdint>
#include <cstring>

#include "next_symbol.h"
#include "step_profile.h"

namespace tleak::agent {
namespace {

using IterateFn = int (*)(PhdrCallback, void*);

std::atomic<IterateFn> g_next_iterate{nullptr};

// Past this many objects the list is not kept and every walk is the C library's.
constexpr int kMaxObjects = 4096;

// Written and read only inside the C library's dl_iterate_phdr (under the loader's lock).
dl_phdr_info g_objects[kMaxObjects];
std::uint16_t g_order[kMaxObjects];  // indexes into g_objects, most recently found first
int g_count = 0;
std::size_t g_info_size = 0;
unsigned long long g_adds = 0, g_subs = 0;
// Read outside the lock only as a hint that the list must be read again first.
std::atomic<bool> g_stale{true};
// Set when the list cannot be kept (too many objects, or a C library whose entries lack the
// counters): every walk is then the C library's.
std::atomic<bool> g_given_up{false};

// Set while this thread walks: a walk inside a walk (a signal handler's) is the C library's.
__thread bool t_walking __attribute__((tls_model("initial-exec"))) = false;

IterateFn next_iterate() { return next_symbol(g_next_iterate, "dl_iterate_phdr"); }

bool has_counters(std::size_t size) {
  return size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof(dl_phdr_info::dlpi_subs);
}

int collect(dl_phdr_info* info, std::size_t size, void* first_call) {
  auto* first = static_cast<bool*>(first_call);
  if (*first) {
    *first = false;
    g_count = 0;
    if (!has_counters(size) || size > sizeof(dl_phdr_info)) {
      g_count = -1;
      g_given_up.store(true, std::memory_order_relaxed);
      return 1;
    }
    g_info_size = size;
    g_adds = info->dlpi_adds;
    g_subs = info->dlpi_subs;
  }
  if (g_count >= kMaxObjects) {
    g_count = -1;
    g_given_up.store(true, std::memory_order_relaxed);
    return 1;
  }
  if (g_count < 0) return 1;
  std::memcpy(&g_objects[g_count], info, size);
  g_order[g_count] = static_cast<std::uint16_t>(g_count);
  ++g_count;
  return 0;
}

struct Walk {
  PhdrCallback callback;
  void* data;
  bool first = true;
  bool from_list = false;  // answered from the list: the C library's walk only runs to its end
};

int dispatch(dl_phdr_info* info, std::size_t size, void* walk_arg) {
  auto* walk = static_cast<Walk*>(walk_arg);
  if (walk->first) {
    walk->first = false;
    // The counters are the same in every object's entry: the first tells whether the list holds
    // exactly the objects loaded now.
    if (g_count > 0 && size == g_info_size && has_counters(size) && info->dlpi_adds == g_adds &&
        info->dlpi_subs == g_subs) {
      walk->from_list = true;
      for (int k = 0; k < g_count; ++k) {
        const std::uint16_t index = g_order[k];
        const int result = walk->callback(&g_objects[index], size, walk->data);
        if (result != 0) {
          std::memmove(&g_order[1], &g_order[0], static_cast<std::size_t>(k) * sizeof g_order[0]);
          g_order[0] = index;
          return result;
        }
      }
      return 0;  // no object holds it: every object was asked, and the rest of the walk is idle
    }
    g_stale.store(true, std::memory_order_relaxed);
  }
  if (walk->from_list) return 0;
  return walk->callback(info, size, walk->data);
}

// libunwind's walk, answered from the list when it holds exactly the objects loaded now.
int search_objects(PhdrCallback callback, void* data) {
  const IterateFn next = next_iterate();
  if (next == nullptr) return 0;
  if (t_walking || g_given_up.load(std::memory_order_relaxed)) return next(callback, data);
  t_walking = true;
  if (g_stale.exchange(false, std::memory_order_relaxed)) {
    bool first = true;
    next(collect, &first);
  }
  Walk walk{callback, data};
  const int result = next(dispatch, &walk);
  t_walking = false;
  return result;
}

}  // namespace

int real_dl_iterate_phdr(PhdrCallback callback, void* data) {
  const IterateFn next = next_iterate();
  return next != nullptr ? next(callback, data) : 0;
}

int unwinder_iterate_objects(PhdrCallback callback, void* data) {
  const std::uint64_t started = step_profile::now();
  const int result = search_objects(callback, data);
  step_profile::add(step_profile::kObjectSearch, step_profile::now() - started);
  return result;
}

// Resolved before the program's own code runs, so that its first call need not ask dlsym.
__attribute__((constructor)) static void find_next_iterate() { next_iterate(); }

}  // namespace tleak::agent
