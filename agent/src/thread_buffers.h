// Per-thread record buffers. A thread appends to its own buffer under its own lock, which no
// other thread takes except a fence (rare), so the allocation path touches no shared cache line.
// A buffer is sent as one message when full, when it holds many allocated bytes (so the parent's
// --max-live check is never far behind), at every fence and when its thread exits; a thread that
// exits gives its slot back for the next new thread.
#pragma once

#include <atomic>
#include <cstdint>

#include "fast_unwind.h"
#include "libunwind_walk.h"
#include "python_frames.h"
#include "site_table.h"
#include "tleak/agent/protocol.h"
#include "tleak/detail/spin_lock.h"

namespace tleak::agent {

// A stack this thread met: the stack its slot stands for (SiteRecord).
struct SiteCacheEntry {
  StackKey key;  // zero: empty
};

// A Python frame seen by this thread: (code, instruction) and the code's file and name objects,
// which tell a code object from another one later allocated at the same address.
struct PythonCacheEntry {
  std::uint64_t code;
  std::uint64_t file;
  std::uint64_t name;
  std::uint32_t instruction;
  std::uint32_t id;  // 0: empty
};

// Whose a code object is (python_code_kind), by code object; its file object checks that the
// object at that address is still the one classified.
struct PythonKindEntry {
  std::uint64_t code;  // 0: empty
  std::uint64_t file;
  PythonCodeKind kind;
};

// A Python frame given an id by the allocation being recorded, to be described before its site.
struct NewPythonFrame {
  PythonFrame frame;
  std::uint32_t id;
};

// Where the agent builds one allocation's stack: in the thread's buffer, not on the thread's own
// stack, which may be small (16 KiB is allowed: tests/programs/small_stack.c); the owning thread
// alone uses it, and only while it records (never re-entered: a malloc inside is passed through).
struct StackScratch {
  // The stack's walk (the agent's, or libunwind's), the interposed function's own return address
  // first. Here rather than in the interposed function's frame: 520 bytes less of a small stack
  // (a signal handler's alternate stack, tests/programs/alt_signal_stack.c) taken by every
  // allocation.
  void* raw[kMaxFrames + 1];
  void* checked[kMaxFrames + 1];  // libunwind's walk of the same stack, when checked (fast_unwind.h)
  UnwindMemo unwind_memo;         // the rules of this thread's walks (fast_unwind.h)
  std::uintptr_t without_agent[kMaxFrames];
  std::uint64_t words[kMaxFrames];
  PythonFrame python[kMaxFrames];
  NewPythonFrame fresh[kMaxFrames + 1];  // the kept Python frames and the user's beyond them
  // libunwind's context and cursor when it walks by steps (libunwind_walk.h).
  alignas(64) unsigned char libunwind_state[kLibunwindStateBytes];
};

struct ThreadBuffer {
  static constexpr std::uint32_t kCacheEntries = kStackSlots;
  static constexpr std::uint32_t kPythonCacheEntries = 512;
  static constexpr std::uint64_t kFlushAllocatedBytes = 1 << 20;

  detail::SpinLock lock;
  std::atomic<bool> taken{false};
  std::uint32_t index = 0;
  std::uint32_t used = 0;
  // Where the records go: a message slot this buffer holds (message_slots.h), or `data` when none
  // was free (the message then goes through the socket).
  unsigned char* out = data;
  int slot = -1;
  // The count of whole records' bytes in `out` the parent can read if the process dies before it
  // sends them: the slot's (MessageSlots::filled), or `own_fill` when the records go to `data`,
  // which dies with the process.
  std::uint32_t own_fill = 0;
  std::uint32_t* filled = &own_fill;
  std::uint64_t allocated_since_send = 0;
  // The stacks this thread met, by slot: an allocation names its stack's (SiteRecord).
  SiteCacheEntry cache[kCacheEntries];
  PythonCacheEntry python_cache[kPythonCacheEntries];
  // The Python frames of the previous stack, by depth: a thread's next stack mostly has the same
  // (98.8% of the PyTorch loop's Python frames), found here in lines the walk keeps warm.
  PythonCacheEntry python_by_depth[kMaxFrames];
  static constexpr std::uint32_t kPythonKindEntries = 256;
  PythonKindEntry python_kinds[kPythonKindEntries];
  // The stack of the last site record this buffer sent, which the next one is written against.
  std::uint32_t last_depth = 0;
  std::uint64_t last_frames[kMaxFrames];
  StackScratch scratch;
  PythonDescription description;  // the last Python frame this thread described
  alignas(64) unsigned char data[kMaxMessageBytes];  // the message when no slot was free

  // Room for `bytes` more (sending what is there first if needed). Call with `lock` held.
  unsigned char* reserve(std::uint32_t bytes);
  // The records written so far are whole: the parent may read them if the process dies now. With
  // `lock` held, after the last record of an allocation or a free.
  void publish() { __atomic_store_n(filled, used, __ATOMIC_RELAXED); }
  // Sends what is buffered, and takes a slot for what follows if it had none. Call with `lock`
  // held.
  void send();
  // A free message slot for the records, if it writes into `data` and one is free. With `lock` held.
  void take_slot();
  // The slot back to the parent's side, unused (the buffer must be empty). With `lock` held.
  void give_back_slot();
};

// The calling thread's buffer, created or reused on first use; nullptr if none can be had (every
// one of the kMaxThreadBuffers taken by threads alive at once): the thread then goes unrecorded, is
// counted once in `*untracked` (thread_buffers_init) and does not ask again.
ThreadBuffer* this_thread_buffer();
// The calling thread's buffer if it has one (never creates one).
ThreadBuffer* current_thread_buffer();

// Whether the main thread has ended (pthread_exit) while the process goes on; known only for a
// main thread that had a buffer (that allocated), else false.
bool main_thread_ended();
// Whether the calling thread is the main thread (the one that started the agent).
bool on_main_thread();

// Every buffer ever created (taken or not). Fences walk them in this order.
std::uint32_t thread_buffer_count();
ThreadBuffer* thread_buffer(std::uint32_t index);

// Creates the thread-exit hook. Once, at start-up, on the main thread. `untracked` (in the control page, or null)
// counts the threads that found no buffer.
bool thread_buffers_init(volatile std::uint64_t* untracked);
// In a forked child: the buffers hold the parent's records and maybe locks held by threads that
// do not exist here. Forget them all.
void thread_buffers_forget();

}  // namespace tleak::agent
