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

// Unwinds the calling thread's stack to the frame whose caller is exit() (or quick_exit(), whose
// at_quick_exit handlers the agent's runs after, agent.cc). True with its stack
// pointer and the values of the callee-saved registers there (rbx, rbp, r12 to r15; up to
// kExitRegisters); false when no such frame is found (the process ends another way), and then the
// caller reads its own stack from its own frame, as before.
inline constexpr int kExitRegisters = 6;
bool exit_handlers_frame(std::uintptr_t* stack_pointer, std::uint64_t* registers);

// For a thread in the interposed _exit (or _Exit), under `agent_code`'s frames: the program's frame
// that called it, its stack pointer and the callee-saved registers as they were at the call, as
// exit_handlers_frame gives them. False if the walk from there to the stack's first frame meets a
// signal handler's frame or cannot reach the first frame: _exit is the one way out a signal
// handler may take, and the handler may have interrupted the C library's malloc, or the agent's
// walk, halfway through a change the scan would read. Such a process ends without a scan, as one
// killed does.
bool exit_call_frame(const CodeRange& agent_code, std::uintptr_t* stack_pointer, std::uint64_t* registers);

namespace real {
// The C library's _exit (the next definition after the agent's), found at start-up: a signal
// handler's _exit must not be the one to call the loader.
[[noreturn]] void exit_call(int status);
}  // namespace real

}  // namespace tleak::agent
