// The agent's state and the two calls the interposed functions make. Everything here runs inside
// the user's program: it never allocates through malloc, never throws, keeps errno, and does
// nothing at all (one load and a branch) when this process is not the one `tleak run` started.
#pragma once

#include <errno.h>
#include <ucontext.h>

#include <cstddef>
#include <cstdint>

#include "fast_unwind.h"
#include "libunwind_walk.h"
#include "sandbox_calls.h"
#include "stack_room.h"
#include "step_profile.h"
#include "thread_buffers.h"
#include "tleak/agent/protocol.h"
#include "tleak/detail/stack_capture.h"

namespace tleak::agent {

// Whether this process is the one tleak runs and this thread is not inside the agent already.
bool active();
// The same, or the program is exiting and its exit scan's answer not yet sent: the blocks other
// threads allocate and free meanwhile are recorded still (no fence is sent any more).
bool tracking();
// Whether this process is the one tleak runs (and records it still).
bool recording_this_process();
// Where tracking() is false: whether this is a copy forked under --record-fork whose recording
// starts now (at its first allocation or free). Out of the recording's path: tracking() stays
// the one test a recorded call makes.
bool starts_recording();

namespace recording {
// Return addresses kept per stack (tleak run --stack-depth), set once at start-up.
extern int g_stack_depth;
// Return addresses walked per allocation, the interposed function's own included: the stack depth
// and one, and in a Python program kCallPathFrames more, for the interpreter's frames that a call
// into an extension passes through, which are left out (with_python_frames) and do not count.
extern int g_walk_depth;
inline constexpr int kCallPathFrames = 4;
// Set while this thread is inside the agent: whatever it allocates meanwhile (libunwind's caches,
// the loader) passes through untracked. Initial-exec TLS never calls into the loader.
extern __thread bool t_inside __attribute__((tls_model("initial-exec")));
// An outside signal (outside_signals.h) that came while this thread was inside the agent: acted on
// as it leaves (leave_agent), 0 if none.
extern __thread int t_pending_signal __attribute__((tls_model("initial-exec")));
// Scans (if it can) and ends the process by t_pending_signal; `in_flight`, a block the agent is
// handing to the program (not yet in any frame of the program's), is read as a root.
[[gnu::cold, gnu::noinline]] void act_on_pending_signal(std::uint64_t in_flight);
// Every way out of the agent: t_inside cleared first, then the pending signal looked at, so that
// a signal coming between the two is handled by its handler, not lost.
[[gnu::always_inline]] inline void leave_agent(std::uint64_t in_flight) {
  t_inside = false;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  if (__builtin_expect(t_pending_signal != 0, 0)) act_on_pending_signal(in_flight);
}
// Allocations this thread has recorded: an operator new that finds it unchanged after the call it
// passed on knows no malloc of the agent's recorded the block (interpose_new.cc).
extern __thread std::uint32_t t_recorded __attribute__((tls_model("initial-exec")));
// The rest of record_alloc, out of line: `buffer` is the thread's (null: it has none) and its
// scratch.raw holds `count` return addresses, the interposed function's own first. Leaves the
// agent (t_inside) and puts errno back. `started`: when the capture began (step_profile.h; 0
// unless profiled).
[[gnu::noinline]] void record_captured_alloc(ThreadBuffer* buffer, const void* address, std::size_t size, int count,
                                             int saved_errno, std::uint64_t started);
}  // namespace recording

// libunwind's walk of the interposed function's stack into `out`, its own return address first:
// unw_backtrace's, or by steps once the program has unloaded an object (libunwind_walk.h).
[[gnu::always_inline]] inline int libunwind_capture_stack(StackScratch& scratch, void** out, int count) {
  if (__builtin_expect(g_walk_by_steps.load(std::memory_order_relaxed), 0)) {
    return walk_by_steps(scratch.libunwind_state, out, count);
  }
  return tleak::detail::capture_stack_here(out, count);
}

// The interposed function's stack into scratch.raw (its own return address first): the agent's
// walk, or libunwind's where that one gives up. Always inlined, for libunwind's to start in the
// interposed function too.
// With `room` kFastWalkOnly (a stack of unknown size), what the agent's walk followed instead.
[[gnu::always_inline]] inline int capture_stack(StackScratch& scratch, int count, StackRoom room) {
  int got = tleak_fast_backtrace(scratch.raw, count, &scratch.unwind_memo);
  if (__builtin_expect(g_check_unwind, 0) && room == StackRoom::kFull) {
    const int theirs = libunwind_capture_stack(scratch, scratch.checked, count);
    check_unwind(scratch.raw, got, scratch.checked, theirs);
  }
  if (__builtin_expect(got < 0, 0)) {
    got = room == StackRoom::kFull ? libunwind_capture_stack(scratch, scratch.raw, count) : -1 - got;
  }
  return got;
}

// A block the program now owns. Always inlined into the interposed function that returns it: its
// stack is captured right there, so libunwind's walk starts in the interposed function, the one
// frame that is not the program's (two more of the agent's were walked before, a seventh of a
// 12-frame stack's frames).
[[gnu::always_inline]] inline void record_alloc(const void* address, std::size_t size) {
  if ((!tracking() && !starts_recording()) || address == nullptr) return;
  const int saved_errno = errno;
  recording::t_inside = true;
  const std::uint64_t started = step_profile::now();
  ThreadBuffer* buffer = this_thread_buffer();
  // A thread near the end of its stack: recorded without its stack rather than crashed (stack_room.h).
  const StackRoom room = buffer != nullptr && recording::g_stack_depth > 0
                             ? stack_room(reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0)))
                             : StackRoom::kNone;
  const int count = room != StackRoom::kNone ? capture_stack(buffer->scratch, recording::g_walk_depth, room) : 0;
  recording::record_captured_alloc(buffer, address, size, count, saved_errno, started);
}
// Call before the block is handed back, so its address cannot be reused before the free is stamped.
void record_free(const void* address);
// A realloc that moved or resized: the old block's free is stamped before the call.
std::uint64_t free_stamp();
void record_free_at(const void* address, std::uint64_t ns);

// Before the program unloads an object (dlclose): the module map goes out first if it changed, so
// that the frames of an object loaded and unloaded between two fences can still be named.
void before_unload();
// After the program's dlclose returned: what libunwind cached of the unloaded object is dropped.
void after_unload();

// Sends every thread's buffer, then a fence record of `kind` (with `name` for a snapshot).
void fence(RecordKind kind, const char* name);

// Before the program enters a seccomp sandbox (sandbox_calls.h), every thread's buffer is sent.
// Where the sandbox may stop the agent's calls, recording stops too, the channel to tleak is closed,
// and the control page says why: from then on the agent makes no system call of its own.
void before_sandbox(SandboxEffect effect);

// While one lives, this thread's calls of the interposed functions pass through unrecorded. For a
// C library function that calls another interposed one (glibc's reallocarray calls realloc
// through the PLT): the block is recorded once, by the outer call, at the program's stack.
class PassThrough {
 public:
  PassThrough();
  ~PassThrough();
  PassThrough(const PassThrough&) = delete;
  PassThrough& operator=(const PassThrough&) = delete;

 private:
  bool was_inside_;
};
// A library loaded with RTLD_DEEPBIND whose calls the agent bound to its own once it was loaded, or
// could not (deep_binding.h): counted in the control page, for the report's notes.
void note_deep_bound(bool rebound);
// Whether the agent binds such libraries' calls to its own: in the process it records, and in the
// source of --record-fork's copies, whose GOT entries the copies inherit.
bool rebinds_deep_bound();

// After the program's exit handlers (the agent's destructor) or its at_quick_exit handlers (the
// agent's own, registered first): the exit fence, the exit scan, the recording's end.
void finish_after_exit_handlers();

// The program called _exit or _Exit (os._exit, how a DataLoader's or a multiprocessing pool's
// workers end; quick_exit's own _exit, inside the C library, is not this, but comes after
// finish_after_exit_handlers): no exit handlers run, no destructors, and the process ends inside
// the call. What it leaves allocated is judged here, as memcheck judges a process that ends so,
// unless the call comes from a signal handler (exit_frame.h, exit_call_frame).
void before_exit_call();

// The program sends itself a signal that ends it in the call (ending_signal.h): CPython after an
// unhandled KeyboardInterrupt, once the interpreter is finalized. Judged as at _exit, with the same
// exception for signal handlers; the call then goes on and the signal ends the process.
void before_ending_signal(int signal);
// The program calls abort() (libstdc++'s std::terminate does, after an uncaught exception): judged
// the same way, unless a handler of SIGABRT would run first (ending_signal.h, abort_ends_process).
void before_abort();

// An outside signal the agent stands in for (outside_signals.h) interrupted this thread at
// `context`. True when the process is to end now, judged first if it is recorded here: its stack
// read from the interrupted frame up, every register a root, as memcheck judges a process killed
// so. False if the signal interrupted the agent itself, whose tables the scan would meet halfway
// through a change: the thread acts on it as it leaves the agent (leave_agent).
bool scan_at_outside_signal(int signal, const ucontext_t* context);

// The channel to the parent is gone (channel.h): recording stops.
void agent_channel_lost();

// Whether this thread is running the agent's own code (libunwind's calls while it captures a
// stack are; a signal handler that interrupted the agent is too).
bool inside_agent();

}  // namespace tleak::agent
