#include "tleak/detail/stack_capture.h"

#include <libunwind.h>

#include <algorithm>
#include <iterator>

namespace tleak::detail {

int capture_stack(std::uintptr_t* out, int max_depth, int skip) {
  // unw_backtrace reports its caller, this function, first; it is never part of the site.
  constexpr int kOwnFrames = 1;
  void* raw[kMaxStackDepth + 16];
  const int wanted = std::min(max_depth + skip + kOwnFrames, static_cast<int>(std::size(raw)));
  const int got = unw_backtrace(raw, wanted);
  const int first = std::min(got, skip + kOwnFrames);
  for (int i = first; i < got; ++i) out[i - first] = reinterpret_cast<std::uintptr_t>(raw[i]);
  return got - first;
}

}  // namespace tleak::detail
