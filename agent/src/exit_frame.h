// Where the exit scan starts reading the exiting thread's stack: the frame of the C library's exit
// handlers (__run_exit_handlers, the function exit() calls), with the registers as that frame
// holds them. The handlers' callees, the agent's destructor among them, are gone once the exit
// handlers have returned, as memcheck sees the process; their frames hold stale words of the
// program's earlier calls (a lost block's address, left in a slot _dl_fini never wrote, read as a
// pointer). The program's own frames and its registers as of exit() are all at or above it.
#pragma once

#include <cstdint>

#include "code_range.h"

namespace tleak::agent {

// At start-up: finds exit() and quick_exit() in the C library (their addresses and sizes).
void exit_frame_init();

// The registers of a frame that is still running, for a walk of its callers made from another
// stack (the exit scan runs on a stack of the agent's own: on_own_stack_from_here).
struct FrameContext;

// Runs `body(here, data)` on a stack of the agent's own (256 KiB, mapped for the call and left out
// of every scan's roots), `here` being this call's frame, from which the walks below reach the
// program's frames. A program may leave (exit, _exit, kill, abort, a signal) from deep in a
// recursion, its stack nearly used up: the walk and the scan on that stack overflowed it, and the
// program died of SIGSEGV instead (tests/programs/deep_leaving.c). Without memory for that stack,
// the body runs where it is, as before.
void on_own_stack_from_here(void (*body)(const FrameContext* here, void* data), void* data);

// Unwinds from `here` to the frame whose caller is exit() (or quick_exit(), whose
// at_quick_exit handlers the agent's runs after, agent.cc). True with its stack
// pointer and the values of the callee-saved registers there (rbx, rbp, r12 to r15; up to
// kExitRegisters); false when no such frame is found (the process ends another way), and then the
// caller reads its own stack from its own frame, as before.
inline constexpr int kExitRegisters = 6;
bool exit_handlers_frame(const FrameContext* here, std::uintptr_t* stack_pointer, std::uint64_t* registers);

// From `here`, for a thread in the interposed _exit (or _Exit), under `agent_code`'s frames: the program's frame
// that called it, its stack pointer and the callee-saved registers as they were at the call, as
// exit_handlers_frame gives them. False if the walk from there to the stack's first frame meets a
// signal handler's frame or cannot reach the first frame: _exit is the one way out a signal
// handler may take, and the handler may have interrupted the C library's malloc, or the agent's
// walk, halfway through a change the scan would read. Such a process ends without a scan, as one
// killed does.
bool exit_call_frame(const CodeRange& agent_code, const FrameContext* here, std::uintptr_t* stack_pointer,
                     std::uint64_t* registers);

namespace real {
// The C library's _exit (the next definition after the agent's), found at start-up: a signal
// handler's _exit must not be the one to call the loader.
[[noreturn]] void exit_call(int status);
}  // namespace real

}  // namespace tleak::agent
