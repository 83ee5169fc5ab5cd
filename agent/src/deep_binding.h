// Libraries the program loads with dlopen(RTLD_DEEPBIND) look their symbols up in their own
// dependencies before the global scope, so their calls to malloc and free go to the C library's and
// pass the agent by: a block the program allocated and such a library freed read as leaked, and
// what it allocated was missing. After such a dlopen, the agent points the new objects' GOT entries
// for the functions it interposes at its own, where they hold (or, bound lazily, would hold) the very
// function the agent's own passes the call on to: the program calls the same code as without tleak,
// now through the agent. Nothing else of the library's binding changes.
#pragma once

namespace tleak::agent {

// The program's dlopen, called from the interposed dlopen's entry (interpose.cc) with the caller's
// return address: whether the agent takes the call (rebinding_dlopen) or the entry passes it on to
// the C library's dlopen unchanged, with the caller's return address still on the stack, which the
// loader reads to search the caller's RUNPATH and expand $ORIGIN. The agent takes it only where
// that cannot matter: RTLD_DEEPBIND, this process recorded (or the source of the copies recorded),
// and a file named by a path, or by a
// name whose search the caller's place does not change (no RPATH or RUNPATH in the caller, no
// RPATH in any loaded object). A deep-bound dlopen it cannot take is counted in the control page.
extern "C" bool tleak_dlopen_is_rebound(const char* file, int mode, const void* caller)
    __attribute__((visibility("hidden")));

// dlopen(file, mode), then the rebinding of every object it loaded. errno is the C library's.
extern "C" void* tleak_rebinding_dlopen(const char* file, int mode) __attribute__((visibility("hidden")));

// The C library's dlopen (dlsym RTLD_NEXT), set by tleak_dlopen_is_rebound before it returns.
extern "C" void* (*tleak_next_dlopen)(const char*, int) __attribute__((visibility("hidden")));

}  // namespace tleak::agent
