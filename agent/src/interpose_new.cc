// C++'s operator new and delete, for a malloc the program preloads that defines them itself
// (cxx_runtime.h). Each one calls the definition the program would have called without tleak;
// only when that one belongs to the preloaded malloc does the agent record here. Otherwise (the
// C library's malloc, libstdc++'s operator new) the call goes straight on and malloc records it.
#include <stddef.h>

#include <atomic>
#include <cstdint>

#include "agent.h"
#include "allocator_regions.h"
#include "cxx_runtime.h"

namespace agent = tleak::agent;

#define TLEAK_EXPORT extern "C" __attribute__((visibility("default"), noinline))

namespace {

// std::nothrow_t: an empty object of which only the address is passed.
struct NothrowTag {};

template <class F>
F next(std::atomic<void*>& slot, const char* name) {
  return reinterpret_cast<F>(agent::next_cxx_function(slot, name));
}

// An operator new of the preloaded malloc's: called as the program would have (its new-handler
// and exceptions go through the agent's frame untouched: the agent holds no state across the
// call), and recorded here unless a malloc of the agent's recorded the block inside it. Out of
// line: the capture's room on the stack is set up only on this path, not for every C++ program's
// every new (which goes on to libstdc++'s operator new, then malloc, where it records).
template <class... Args>
[[gnu::noinline]] void* new_recorded_here(void* (*real)(size_t, Args...), size_t size, Args... args) {
  const std::uint32_t recorded = agent::recording::t_recorded;
  void* p = real(size, args...);
  if (agent::recording::t_recorded == recorded) agent::record_alloc(p, size);
  return p;
}

// `args`: the alignment and std::nothrow, if any.
template <class... Args>
[[gnu::always_inline]] inline void* forward_new(std::atomic<void*>& slot, const char* name, size_t size, Args... args) {
  const auto real = next<void* (*)(size_t, Args...)>(slot, name);
  if (!agent::allocator_code_holds(reinterpret_cast<void*>(real)) || !agent::tracking()) return real(size, args...);
  return new_recorded_here<Args...>(real, size, args...);
}

// Every operator delete: the free is stamped before the block is handed back.
template <class... Args>
void forward_delete(std::atomic<void*>& slot, const char* name, void* p, Args... args) {
  const auto real = next<void (*)(void*, Args...)>(slot, name);
  if (p != nullptr && agent::allocator_code_holds(reinterpret_cast<void*>(real)) && agent::tracking()) {
    agent::record_free(p);
    const agent::PassThrough inner;
    real(p, args...);
    return;
  }
  real(p, args...);
}

std::atomic<void*> g_new[8];
std::atomic<void*> g_delete[12];

}  // namespace

TLEAK_EXPORT void* _Znwm(size_t size) { return forward_new(g_new[0], "_Znwm", size); }
TLEAK_EXPORT void* _Znam(size_t size) { return forward_new(g_new[1], "_Znam", size); }
TLEAK_EXPORT void* _ZnwmRKSt9nothrow_t(size_t size, const NothrowTag& tag) noexcept {
  return forward_new<const NothrowTag&>(g_new[2], "_ZnwmRKSt9nothrow_t", size, tag);
}
TLEAK_EXPORT void* _ZnamRKSt9nothrow_t(size_t size, const NothrowTag& tag) noexcept {
  return forward_new<const NothrowTag&>(g_new[3], "_ZnamRKSt9nothrow_t", size, tag);
}
TLEAK_EXPORT void* _ZnwmSt11align_val_t(size_t size, size_t alignment) {
  return forward_new(g_new[4], "_ZnwmSt11align_val_t", size, alignment);
}
TLEAK_EXPORT void* _ZnamSt11align_val_t(size_t size, size_t alignment) {
  return forward_new(g_new[5], "_ZnamSt11align_val_t", size, alignment);
}
TLEAK_EXPORT void* _ZnwmSt11align_val_tRKSt9nothrow_t(size_t size, size_t alignment, const NothrowTag& tag) noexcept {
  return forward_new<size_t, const NothrowTag&>(g_new[6], "_ZnwmSt11align_val_tRKSt9nothrow_t", size, alignment, tag);
}
TLEAK_EXPORT void* _ZnamSt11align_val_tRKSt9nothrow_t(size_t size, size_t alignment, const NothrowTag& tag) noexcept {
  return forward_new<size_t, const NothrowTag&>(g_new[7], "_ZnamSt11align_val_tRKSt9nothrow_t", size, alignment, tag);
}

TLEAK_EXPORT void _ZdlPv(void* p) noexcept { forward_delete(g_delete[0], "_ZdlPv", p); }
TLEAK_EXPORT void _ZdaPv(void* p) noexcept { forward_delete(g_delete[1], "_ZdaPv", p); }
TLEAK_EXPORT void _ZdlPvm(void* p, size_t size) noexcept { forward_delete(g_delete[2], "_ZdlPvm", p, size); }
TLEAK_EXPORT void _ZdaPvm(void* p, size_t size) noexcept { forward_delete(g_delete[3], "_ZdaPvm", p, size); }
TLEAK_EXPORT void _ZdlPvRKSt9nothrow_t(void* p, const NothrowTag& tag) noexcept {
  forward_delete<const NothrowTag&>(g_delete[4], "_ZdlPvRKSt9nothrow_t", p, tag);
}
TLEAK_EXPORT void _ZdaPvRKSt9nothrow_t(void* p, const NothrowTag& tag) noexcept {
  forward_delete<const NothrowTag&>(g_delete[5], "_ZdaPvRKSt9nothrow_t", p, tag);
}
TLEAK_EXPORT void _ZdlPvSt11align_val_t(void* p, size_t alignment) noexcept {
  forward_delete(g_delete[6], "_ZdlPvSt11align_val_t", p, alignment);
}
TLEAK_EXPORT void _ZdaPvSt11align_val_t(void* p, size_t alignment) noexcept {
  forward_delete(g_delete[7], "_ZdaPvSt11align_val_t", p, alignment);
}
TLEAK_EXPORT void _ZdlPvmSt11align_val_t(void* p, size_t size, size_t alignment) noexcept {
  forward_delete(g_delete[8], "_ZdlPvmSt11align_val_t", p, size, alignment);
}
TLEAK_EXPORT void _ZdaPvmSt11align_val_t(void* p, size_t size, size_t alignment) noexcept {
  forward_delete(g_delete[9], "_ZdaPvmSt11align_val_t", p, size, alignment);
}
TLEAK_EXPORT void _ZdlPvSt11align_val_tRKSt9nothrow_t(void* p, size_t alignment, const NothrowTag& tag) noexcept {
  forward_delete<size_t, const NothrowTag&>(g_delete[10], "_ZdlPvSt11align_val_tRKSt9nothrow_t", p, alignment, tag);
}
TLEAK_EXPORT void _ZdaPvSt11align_val_tRKSt9nothrow_t(void* p, size_t alignment, const NothrowTag& tag) noexcept {
  forward_delete<size_t, const NothrowTag&>(g_delete[11], "_ZdaPvSt11align_val_tRKSt9nothrow_t", p, alignment, tag);
}
