#include "step_profile.h"

#if defined(TLEAK_AGENT_PROFILE)
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include <atomic>
#include <cstdio>

namespace tleak::agent::step_profile {

std::atomic<std::uint64_t> g_counts[kCounts];

namespace {

std::atomic<std::uint64_t> g_ticks[kSteps];
std::uint64_t g_start_ticks = 0, g_start_ns = 0;

std::uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

__attribute__((constructor)) void start() {
  g_start_ticks = __rdtsc();
  g_start_ns = monotonic_ns();
}

// Ticks turned into milliseconds by the counter's rate over the whole run.
__attribute__((destructor)) void print() {
  const double ticks_per_ms =
      static_cast<double>(__rdtsc() - g_start_ticks) / (static_cast<double>(monotonic_ns() - g_start_ns) / 1e6);
  if (!(ticks_per_ms > 0)) return;
  static const char* const kNames[kSteps] = {"unwind", "of it object searches", "python frames", "hash",
                                             "lock", "write"};
  char line[512];
  int at = std::snprintf(line, sizeof line, "tleak agent profile (pid %d, ms):", static_cast<int>(getpid()));
  for (int s = 0; s < kSteps && at > 0 && at < static_cast<int>(sizeof line); ++s) {
    at += std::snprintf(line + at, sizeof line - static_cast<std::size_t>(at), " %s %.1f;", kNames[s],
                        static_cast<double>(g_ticks[s].load()) / ticks_per_ms);
  }
  static const char* const kCountNames[kCounts] = {"frames", "by depth", "recent", "shared", "found",
                                                   "allocations", "site records", "Python frame records"};
  for (int c = 0; c < kCounts && at > 0 && at < static_cast<int>(sizeof line); ++c) {
    at += std::snprintf(line + at, sizeof line - static_cast<std::size_t>(at), " %s %llu;", kCountNames[c],
                        static_cast<unsigned long long>(g_counts[c].load()));
  }
  if (at > 0 && at < static_cast<int>(sizeof line)) line[at++] = '\n';
  (void)!write(2, line, static_cast<std::size_t>(at));
}

}  // namespace

std::uint64_t now() { return __rdtsc(); }
void add(Step step, std::uint64_t ticks) { g_ticks[step].fetch_add(ticks, std::memory_order_relaxed); }
}  // namespace tleak::agent::step_profile
#endif
