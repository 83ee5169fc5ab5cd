#include "tleak/detail/stack_capture.h"

#include <libunwind.h>
#include <unwind.h>
#include <valgrind/valgrind.h>

#include <algorithm>
#include <atomic>
#include <iterator>

namespace tleak::detail {
namespace {

struct Collected {
  void** out;
  int max;
  int count;
};

_Unwind_Reason_Code collect(_Unwind_Context* context, void* arg) {
  auto* c = static_cast<Collected*>(arg);
  if (c->count >= c->max) return _URC_END_OF_STACK;
  c->out[c->count++] = reinterpret_cast<void*>(_Unwind_GetIP(context));
  return _URC_NO_REASON;
}

bool use_toolchain_unwinder() {
#if defined(TLEAK_TOOLCHAIN_UNWINDER)
  return true;
#else
  // Not a function-local `static const bool`: its guard is the C++ runtime's (__cxa_guard_*), which
  // would load libstdc++ into every program the agent runs in, C programs included. A race here is
  // benign: every thread finds the same answer.
  static std::atomic<int> answer{-1};
  int known = answer.load(std::memory_order_relaxed);
  if (known < 0) {
    known = RUNNING_ON_VALGRIND != 0 ? 1 : 0;
    answer.store(known, std::memory_order_relaxed);
  }
  return known != 0;
#endif
}

}  // namespace

int capture_stack(std::uintptr_t* out, int max_depth, int skip) {
  // unw_backtrace reports its caller, this function, first; it is never part of the site.
  constexpr int kOwnFrames = 1;
  void* raw[kMaxStackDepth + 16];
  const int wanted = std::min(max_depth + skip + kOwnFrames, static_cast<int>(std::size(raw)));
  // libunwind probes each stack address by writing it to a pipe, which memcheck reports as a
  // write of uninitialised bytes; under Valgrind the toolchain's unwinder (libgcc's, linked ahead
  // of libunwind) takes its place, slower but clean. Outside Valgrind the check is one client
  // request, once. Both report this function's own frame first.
  // Under ThreadSanitizer too: libunwind's per-thread cache is torn down after TSan's thread
  // state, and its destructor's lock then crashes the thread's exit.
  int got = 0;
  if (use_toolchain_unwinder()) {
    Collected c{raw, wanted, 0};
    _Unwind_Backtrace(collect, &c);
    got = c.count;
  } else {
    got = unw_backtrace(raw, wanted);
  }
  const int first = std::min(got, skip + kOwnFrames);
  for (int i = first; i < got; ++i) out[i - first] = reinterpret_cast<std::uintptr_t>(raw[i]);
  return got - first;
}

}  // namespace tleak::detail
