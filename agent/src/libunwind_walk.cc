#include "libunwind_walk.h"

// Local unwinding only: the names libunwind.so itself exports.
#define UNW_LOCAL_ONLY
#include <errno.h>
#include <libunwind.h>

namespace tleak::agent {

std::atomic<bool> g_walk_by_steps{false};

namespace {

struct State {
  unw_context_t context;
  unw_cursor_t cursor;
};
static_assert(sizeof(State) <= kLibunwindStateBytes,
              "libunwind's context and cursor need more room");

}  // namespace

void libunwind_before_unload() { g_walk_by_steps.store(true, std::memory_order_relaxed); }

void libunwind_after_unload() {
  const int saved_errno = errno;
  // Marks every thread's cache of rules out of date (a generation count; this libunwind reads no
  // .debug_frame, whose tables the call would also unmap).
  unw_flush_cache(unw_local_addr_space, 0, 0);
  errno = saved_errno;
}

int walk_by_steps(unsigned char* state_bytes, void** out, int count) {
  auto* state = reinterpret_cast<State*>(state_bytes);
  if (count <= 0 || unw_getcontext(&state->context) != 0 ||
      unw_init_local(&state->cursor, &state->context) != 0) {
    return 0;
  }
  // The first step leaves this function's frame: the caller's return address comes first.
  int depth = 0;
  while (depth < count && unw_step(&state->cursor) > 0) {
    unw_word_t ip = 0;
    if (unw_get_reg(&state->cursor, UNW_REG_IP, &ip) != 0 || ip == 0) break;
    out[depth++] = reinterpret_cast<void*>(ip);
  }
  return depth;
}

int stack_pointers_by_steps(unsigned char* state_bytes, std::uintptr_t* out, int count) {
  auto* state = reinterpret_cast<State*>(state_bytes);
  if (count <= 0 || unw_getcontext(&state->context) != 0 ||
      unw_init_local(&state->cursor, &state->context) != 0) {
    return -1;
  }
  int depth = 0;
  for (;;) {
    const int stepped = unw_step(&state->cursor);
    if (stepped == 0) return depth;
    if (stepped < 0 || depth == count) return -1;
    unw_word_t sp = 0;
    if (unw_get_reg(&state->cursor, UNW_REG_SP, &sp) != 0) return -1;
    out[depth++] = sp;
  }
}

}  // namespace tleak::agent
