// The agent's state and the two calls the interposed functions make. Everything here runs inside
// the user's program: it never allocates through malloc, never throws, keeps errno, and does
// nothing at all (one load and a branch) when this process is not the one `tleak run` started.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tleak/agent/protocol.h"

namespace tleak::agent {

// A block the program now owns; call it straight from the interposed function (its stack is
// captured from the interposed function's caller on).
[[gnu::noinline]] void record_alloc(const void* address, std::size_t size);
// Call before the block is handed back, so its address cannot be reused before the free is stamped.
void record_free(const void* address);
// A realloc that moved or resized: the old block's free is stamped before the call.
std::uint64_t free_stamp();
void record_free_at(const void* address, std::uint64_t ns);

// Before the program unloads an object (dlclose): the module map goes out first if it changed, so
// that the frames of an object loaded and unloaded between two fences can still be named.
void before_unload();

// Sends every thread's buffer, then a fence record of `kind` (with `name` for a snapshot).
void fence(RecordKind kind, const char* name);

bool active();

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
// Whether this thread is running the agent's own code (libunwind's calls while it captures a
// stack are; a signal handler that interrupted the agent is too).
bool inside_agent();

}  // namespace tleak::agent
