// Where the exit scan starts reading the exiting thread's stack: the frame of the C library's exit
// handlers (__run_exit_handlers, the function exit() calls), with the registers as that frame
// holds them. The handlers' callees, the agent's destructor among them, are gone once the exit
// handlers have returned, as memcheck sees the process; their frames hold stale words of the
// program's earlier calls (a lost block's address, left in a slot _dl_fini never wrote, read as a
// pointer). The program's own frames and its registers as of exit() are all at or above it.
#pragma once

#include <cstdint>

namespace tleak::agent {

// At start-up: finds exit() in the C library (its address and size).
void exit_frame_init();

// Unwinds the calling thread's stack to the frame whose caller is exit(). True with its stack
// pointer and the values of the callee-saved registers there (rbx, rbp, r12 to r15; up to
// kExitRegisters); false when no such frame is found (the process ends another way), and then the
// caller reads its own stack from its own frame, as before.
inline constexpr int kExitRegisters = 6;
bool exit_handlers_frame(std::uintptr_t* stack_pointer, std::uint64_t* registers);

}  // namespace tleak::agent
