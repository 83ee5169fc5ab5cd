// The functions the program calls instead of the C library's: each calls the real one, then tells
// the agent. C++ new and delete reach these through libstdc++. What the program sees is exactly
// what the real allocator returned: same pointers, alignment, usable size and errno.
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>

#include "agent.h"
#include "allocator_regions.h"
#include "channel.h"
#include "deep_binding.h"
#include "descriptors.h"
#include "ending_signal.h"
#include "exit_frame.h"
#include "modules.h"
#include "next_symbol.h"
#include "outside_signals.h"
#include "real_malloc.h"
#include "sandbox_calls.h"
#include "stack_room.h"
#include "unwinder_objects.h"
#include "unwinder_signals.h"

namespace agent = tleak::agent;
namespace real = tleak::agent::real;

#define TLEAK_EXPORT extern "C" __attribute__((visibility("default"), noinline))

TLEAK_EXPORT void* malloc(size_t size) {
  void* p = real::malloc(size);
  agent::record_alloc(p, size);
  return p;
}

TLEAK_EXPORT void free(void* ptr) {
  if (ptr == nullptr || real::is_bootstrap(ptr)) return;
  agent::record_free(ptr);
  real::free(ptr);
}

TLEAK_EXPORT void* calloc(size_t count, size_t size) {
  void* p = real::calloc(count, size);
  agent::record_alloc(p, count * size);
  return p;
}

namespace {

// realloc and reallocarray: the old block's free is stamped before the call (its address may be
// handed to another thread the moment the real call returns), and sent only if the call succeeded.
[[gnu::always_inline]] inline void* track_resize(void* old, size_t size, void* fresh, uint64_t freed_ns) {
  if (fresh != nullptr) {
    if (old != nullptr && !real::is_bootstrap(old)) agent::record_free_at(old, freed_ns);
    agent::record_alloc(fresh, size);
  } else if (size == 0 && old != nullptr && !real::is_bootstrap(old)) {
    agent::record_free_at(old, freed_ns);  // glibc's realloc(p, 0) frees p and returns null
  }
  return fresh;
}

}  // namespace

TLEAK_EXPORT void* realloc(void* ptr, size_t size) {
  const uint64_t freed_ns = ptr != nullptr ? agent::free_stamp() : 0;
  return track_resize(ptr, size, real::realloc(ptr, size), freed_ns);
}

TLEAK_EXPORT void* reallocarray(void* ptr, size_t count, size_t size) {
  const uint64_t freed_ns = ptr != nullptr ? agent::free_stamp() : 0;
  void* fresh;
  {
    const agent::PassThrough nested;  // glibc's reallocarray is realloc (ours) after its check
    fresh = real::reallocarray(ptr, count, size);
  }
  // A failed overflow check leaves the old block alone, whatever count * size wrapped to; else it
  // is realloc (a zero size frees the old block, as realloc's does).
  if (size != 0 && count > SIZE_MAX / size) return fresh;
  return track_resize(ptr, count * size, fresh, freed_ns);
}

TLEAK_EXPORT int posix_memalign(void** out, size_t alignment, size_t size) {
  const int result = real::posix_memalign(out, alignment, size);
  if (result == 0) agent::record_alloc(*out, size);
  return result;
}

TLEAK_EXPORT void* aligned_alloc(size_t alignment, size_t size) {
  void* p = real::aligned_alloc(alignment, size);
  agent::record_alloc(p, size);
  return p;
}

TLEAK_EXPORT void* memalign(size_t alignment, size_t size) {
  void* p = real::memalign(alignment, size);
  agent::record_alloc(p, size);
  return p;
}

TLEAK_EXPORT void* valloc(size_t size) {
  void* p = real::valloc(size);
  agent::record_alloc(p, size);
  return p;
}

TLEAK_EXPORT void* pvalloc(size_t size) {
  void* p = real::pvalloc(size);
  agent::record_alloc(p, size);
  return p;
}

// A malloc the program preloads (jemalloc) maps its memory through these: the exit scan must not
// take that memory for the program's (allocator_regions.h). Each call goes on unchanged.
namespace {
using MmapFunction = void* (*)(void*, size_t, int, int, int, off_t);
using MunmapFunction = int (*)(void*, size_t);
using MremapFunction = void* (*)(void*, size_t, size_t, int, ...);
std::atomic<MmapFunction> g_next_mmap{nullptr}, g_next_mmap64{nullptr};
std::atomic<MunmapFunction> g_next_munmap{nullptr};
std::atomic<MremapFunction> g_next_mremap{nullptr};

// Resolved before the program's own code runs, like every function the agent passes on: a lookup
// at the first call (the exit scan's own first munmap, in a program that never called it) went
// through dlsym, which frees a dlerror() message the program had not read yet, unrecorded: that
// message then read as a leak.
__attribute__((constructor)) void find_next_mappings() {
  agent::next_symbol(g_next_mmap, "mmap");
  agent::next_symbol(g_next_mmap64, "mmap64");
  agent::next_symbol(g_next_munmap, "munmap");
  agent::next_symbol(g_next_mremap, "mremap");
}
}  // namespace

TLEAK_EXPORT void* mmap(void* address, size_t length, int protection, int flags, int fd, off_t offset) {
  void* p = agent::next_symbol(g_next_mmap, "mmap")(address, length, protection, flags, fd, offset);
  if (p != MAP_FAILED) agent::allocator_mapped(p, length, flags, __builtin_return_address(0));
  return p;
}

TLEAK_EXPORT void* mmap64(void* address, size_t length, int protection, int flags, int fd, off_t offset) {
  void* p = agent::next_symbol(g_next_mmap64, "mmap64")(address, length, protection, flags, fd, offset);
  if (p != MAP_FAILED) agent::allocator_mapped(p, length, flags, __builtin_return_address(0));
  return p;
}

TLEAK_EXPORT int munmap(void* address, size_t length) {
  const int result = agent::next_symbol(g_next_munmap, "munmap")(address, length);
  if (result == 0) agent::allocator_unmapped(address, length);
  return result;
}

TLEAK_EXPORT void* mremap(void* old_address, size_t old_length, size_t length, int flags, ...) {
  void* wanted = nullptr;
  if ((flags & MREMAP_FIXED) != 0) {  // the only case with a fifth argument, as the C library reads it
    va_list rest;
    va_start(rest, flags);
    wanted = va_arg(rest, void*);
    va_end(rest);
  }
  void* p = agent::next_symbol(g_next_mremap, "mremap")(old_address, old_length, length, flags, wanted);
  if (p != MAP_FAILED) agent::allocator_remapped(old_address, old_length, p, length);
  return p;
}

// libunwind's own calls while it captures a stack for the agent are not made (unwinder_signals.h).
TLEAK_EXPORT int sigprocmask(int how, const sigset_t* set, sigset_t* old) noexcept {
  if (agent::inside_agent() && agent::is_unwinder_code(__builtin_return_address(0))) return 0;
  return agent::real_sigprocmask(how, set, old);
}

// Signals whose default action the agent stands in for (outside_signals.h) read as the default
// action; every other call is the C library's.
TLEAK_EXPORT int sigaction(int signal, const struct sigaction* action, struct sigaction* old) noexcept {
  return agent::program_sigaction(signal, action, old);
}

namespace {
using SignalFunction = sighandler_t (*)(int, sighandler_t);
std::atomic<SignalFunction> g_next_signal{nullptr}, g_next_bsd_signal{nullptr}, g_next_sysv_signal{nullptr},
    g_next_sigset{nullptr};
__attribute__((constructor)) void find_next_signal_functions() {
  agent::next_symbol(g_next_signal, "signal");
  agent::next_symbol(g_next_bsd_signal, "bsd_signal");
  agent::next_symbol(g_next_sysv_signal, "sysv_signal");
  agent::next_symbol(g_next_sigset, "sigset");
}
}  // namespace

TLEAK_EXPORT sighandler_t signal(int signal, sighandler_t handler) noexcept {
  if (agent::is_outside_signal(signal)) return agent::program_signal(signal, handler, false);
  return agent::next_symbol(g_next_signal, "signal")(signal, handler);
}

TLEAK_EXPORT sighandler_t bsd_signal(int signal, sighandler_t handler) noexcept {
  if (agent::is_outside_signal(signal)) return agent::program_signal(signal, handler, false);
  return agent::next_symbol(g_next_bsd_signal, "bsd_signal")(signal, handler);
}

TLEAK_EXPORT sighandler_t sysv_signal(int signal, sighandler_t handler) noexcept {
  if (agent::is_outside_signal(signal)) return agent::program_signal(signal, handler, true);
  return agent::next_symbol(g_next_sysv_signal, "sysv_signal")(signal, handler);
}

TLEAK_EXPORT sighandler_t sigset(int signal, sighandler_t disposition) noexcept {
  if (agent::is_outside_signal(signal)) return agent::program_sigset(signal, disposition);
  return agent::next_symbol(g_next_sigset, "sigset")(signal, disposition);
}

namespace {
std::atomic<int (*)(const stack_t*, stack_t*)> g_next_sigaltstack{nullptr};
// Resolved before the program's own code runs, as find_next_mappings above says why.
__attribute__((constructor)) void find_next_sigaltstack() { agent::next_symbol(g_next_sigaltstack, "sigaltstack"); }
}  // namespace

// The alternate signal stack's bounds, for the check that a handler running there has room for the
// agent's walk (stack_room.h).
TLEAK_EXPORT int sigaltstack(const stack_t* stack, stack_t* old) noexcept {
  const int result = agent::next_symbol(g_next_sigaltstack, "sigaltstack")(stack, old);
  if (result == 0 && stack != nullptr) {
    agent::note_alternate_stack(stack->ss_sp, stack->ss_size, (stack->ss_flags & SS_DISABLE) != 0);
  }
  return result;
}

// libunwind's search for the object holding an address while it captures a stack for the agent is
// answered in most-recently-found order (unwinder_objects.h).
TLEAK_EXPORT int dl_iterate_phdr(agent::PhdrCallback callback, void* data) {
  if (agent::inside_agent() && agent::is_unwinder_code(__builtin_return_address(0))) {
    return agent::unwinder_iterate_objects(callback, data);
  }
  return agent::real_dl_iterate_phdr(callback, data);
}

// An object about to be unloaded: its place in the module map is sent first (agent.h).
TLEAK_EXPORT int dlclose(void* handle) {
  agent::before_unload();
  const int result = agent::real_dlclose(handle);
  agent::after_unload();
  return result;
}

// dlopen: the loader reads its caller's return address (to search the caller's RUNPATH, expand
// $ORIGIN, load into the caller's namespace), so the call goes on to the C library's by a jump, the
// program's return address still on the stack, unless the agent takes it to bind a deep-bound
// library's calls to its own functions (deep_binding.h). The caller's return address is the third
// argument of the question.
#if defined(__x86_64__)
asm(R"(
    .text
    .globl dlopen
    .type dlopen, @function
    .p2align 4
dlopen:
    .cfi_startproc
    endbr64
    pushq %rdi
    .cfi_adjust_cfa_offset 8
    pushq %rsi
    .cfi_adjust_cfa_offset 8
    movq 16(%rsp), %rdx
    subq $8, %rsp
    .cfi_adjust_cfa_offset 8
    call tleak_dlopen_is_rebound
    addq $8, %rsp
    .cfi_adjust_cfa_offset -8
    popq %rsi
    .cfi_adjust_cfa_offset -8
    popq %rdi
    .cfi_adjust_cfa_offset -8
    testb %al, %al
    jnz tleak_rebinding_dlopen
    jmpq *tleak_next_dlopen(%rip)
    .cfi_endproc
    .size dlopen, .-dlopen
)");
#endif

// A program that closes every descriptor it may have inherited (a daemon, Python's os.closerange)
// closes the agent's channel too: that one is kept, and every other goes as asked (channel.h).
TLEAK_EXPORT int close(int fd) {
  if (agent::channel_is(fd)) return 0;
  return real::close(fd);
}

TLEAK_EXPORT int close_range(unsigned first, unsigned last, int flags) {
  constexpr int kCloexecOnly = 1 << 2;  // CLOSE_RANGE_CLOEXEC marks, closes nothing (the channel's is set)
  const int ours = agent::channel_descriptor();
  if (ours < 0 || (flags & kCloexecOnly) != 0 || static_cast<unsigned>(ours) < first ||
      static_cast<unsigned>(ours) > last) {
    return real::close_range(first, last, flags);
  }
  int result = 0;
  if (static_cast<unsigned>(ours) > first) result = real::close_range(first, static_cast<unsigned>(ours) - 1, flags);
  if (result == 0 && static_cast<unsigned>(ours) < last) result = real::close_range(static_cast<unsigned>(ours) + 1, last, flags);
  return result;
}

TLEAK_EXPORT void closefrom(int first) {
  const int ours = agent::channel_descriptor();
  if (ours < 0 || ours < first) {
    real::closefrom(first);
    return;
  }
  const int saved_errno = errno;
  // Below the channel: one call, or one close each where the kernel has no close_range (before
  // Linux 5.9; there are at most a few hundred below it).
  if (ours > first && real::close_range(static_cast<unsigned>(first), static_cast<unsigned>(ours) - 1, 0) != 0) {
    for (int fd = first; fd < ours; ++fd) real::close(fd);
  }
  real::closefrom(ours + 1);
  errno = saved_errno;
}

// A descriptor of the program's put on the channel's number: the channel moves away first.
TLEAK_EXPORT int dup2(int from, int to) {
  if (from != to) agent::channel_move_off(to);
  return real::dup2(from, to);
}

TLEAK_EXPORT int dup3(int from, int to, int flags) {
  if (from != to) agent::channel_move_off(to);
  return real::dup3(from, to, flags);
}

// Entering a seccomp sandbox: the agent sends what it has first, and stops recording where the filter
// may stop its calls (sandbox_calls.h).
TLEAK_EXPORT int prctl(int option, ...) {
  va_list args;
  va_start(args, option);
  const unsigned long a2 = va_arg(args, unsigned long), a3 = va_arg(args, unsigned long),
                      a4 = va_arg(args, unsigned long), a5 = va_arg(args, unsigned long);
  va_end(args);
  agent::before_sandbox(agent::prctl_sandbox_effect(option, a2, a3));
  return agent::real::prctl(option, a2, a3, a4, a5);
}

// As the C library's: six arguments read whatever the caller passed (unused ones are ignored by the
// kernel).
TLEAK_EXPORT long syscall(long number, ...) {
  va_list args;
  va_start(args, number);
  const long a1 = va_arg(args, long), a2 = va_arg(args, long), a3 = va_arg(args, long), a4 = va_arg(args, long),
             a5 = va_arg(args, long), a6 = va_arg(args, long);
  va_end(args);
  agent::before_sandbox(agent::syscall_sandbox_effect(number, a1, a2, a3));
  return agent::real::syscall(number, a1, a2, a3, a4, a5, a6);
}

// The ways out that skip exit handlers: the exit scan runs first (agent.h, before_exit_call).
extern "C" __attribute__((visibility("default"), noinline, noreturn)) void _exit(int status) {
  agent::before_exit_call();
  agent::real::exit_call(status);
}

extern "C" __attribute__((visibility("default"), noinline, noreturn)) void _Exit(int status) noexcept {
  agent::before_exit_call();
  agent::real::exit_call(status);
}

// A signal the program sends itself (ending_signal.h): when it ends the process in the call, the
// exit scan runs first.
TLEAK_EXPORT int kill(pid_t pid, int signal) noexcept {
  if (pid > 0 && pid == getpid()) agent::before_ending_signal(signal);
  return real::kill(pid, signal);
}

TLEAK_EXPORT int raise(int signal) noexcept {
  agent::before_ending_signal(signal);
  return real::raise(signal);
}

extern "C" __attribute__((visibility("default"), noinline, noreturn)) void abort(void) noexcept {
  agent::before_abort();
  real::abort();
}

// The marks API (tleak/marks.h calls these through weak references).
TLEAK_EXPORT void tleak_agent_mark_iteration(void) { agent::fence(agent::RecordKind::kMark, nullptr); }

// Whether this process is recorded (a child the program forked or started is not).
TLEAK_EXPORT int tleak_agent_recording(void) { return agent::recording_this_process() ? 1 : 0; }

TLEAK_EXPORT void tleak_agent_snapshot(const char* name) {
  agent::fence(agent::RecordKind::kSnapshot, name != nullptr && name[0] != '\0' ? name : "snapshot");
}
