// The exit scan that tells a true leak from memory a program simply did not free: which of the
// live blocks can still be reached, the way memcheck and LeakSanitizer decide it. Roots are every
// readable, writable private mapping that is not heap (data and bss of every module, thread
// stacks, anonymous mappings such as an interpreter's own arenas), minus the agent's own tables;
// the calling thread's stack only from where the program's own frames begin (the caller spills
// the program's registers there), not the agent's frames below, whose registers and locals hold
// the addresses of blocks the scan is judging; and the registers given (the exiting thread's, and
// the other threads' that the parent read: core/diagnosis/src/thread_registers.h).
// Then a flood fill: every aligned word that points into a live block (interior pointers count)
// makes that block reachable, and its contents are scanned in turn.
//
// Except where a word is known not to be a pointer: the payload of objects of a data-only kind
// (an interpreter's bytecode, bytes and text). On a non-PIE executable the heap lies at low addresses, where
// ordinary data reads as heap addresses: in CPython 3.11's frozen modules, an instruction followed
// by inline-cache units is 0x0??? 0000 in a word, line tables, short names ("dev2") and
// a type's flags are no different, and in about one run in thirteen of a ctypes test three to five of
// its 50 leaked 4 KiB buffers read as reachable.
#pragma once

#include <cstdint>

#include "ended_stacks.h"
#include "object_pools.h"
#include "tleak/agent/protocol.h"

namespace tleak::agent {

struct LiveBlock {
  std::uint64_t address;
  std::uint64_t size;
};

// Objects laid out as reference count, type, size (the type word tells them), whose `size` units
// of `unit_bytes` from `data_offset` hold no pointers (or `fixed_units`, for a fixed field such
// as a type's flags). A match must hold up: the payload followed by `terminator` zero bytes,
// all of it ASCII if `ascii`, the header word at `when_offset` with `when_value` in the bits of
// `when_mask` if set (a str's form decides where its text lies), and the whole object inside
// the memory read at once: a heap block it fills exactly, or one run of a root region. A
// coincidence (a tuple holding `str`, then a small number) fails one of these.
struct DataOnlyKind {
  std::uint64_t type;
  std::uint32_t data_offset;  // a multiple of 8
  std::uint32_t unit_bytes;
  std::uint32_t fixed_units = 0;
  std::uint32_t terminator = 0;
  bool ascii = false;
  std::uint32_t when_offset = 0;  // a multiple of 8
  std::uint64_t when_mask = 0, when_value = 0;
};

// Where the threads' stacks begin to be read, and the registers read as roots.
struct ThreadRoots {
  std::uintptr_t stack_from = 0;  // the calling thread's stack is read from here up
  const std::uint64_t* registers = nullptr;  // roots too: the calling thread's and the others'
  std::uint64_t register_count = 0;
  // The stack of a main thread that has ended, from here up (0: read whole).
  std::uintptr_t ended_main_stack = 0;
  // Other threads whose stack pointers the parent read (all of them, or none): each one's stack is
  // read from its stack pointer up, less the red zone, where the stack is its own mapping.
  const ThreadStack* thread_stacks = nullptr;
  std::uint64_t thread_stack_count = 0;
  // Blocks other threads allocated after the live list was made (late_blocks.h): roots, read
  // through the kernel (a thread tleak could not stop may free one meanwhile).
  const LiveBlock* late_blocks = nullptr;
  std::uint64_t late_block_count = 0;
  // Every other thread's stack pointer is in `thread_stacks` (kEveryThreadRead): a stack where none
  // lies is no living thread's, and one of the threads that ended (`ended_stacks`) is read from
  // where it left off (ended_stacks.h).
  bool every_thread_read = false;
  const EndedStack* ended_stacks = nullptr;
  int ended_stack_count = 0;
  // The malloc heap outside the live blocks is read as roots too: it holds blocks the agent never
  // saw, live (a forked copy's, allocated before its recording began), which may be all that points
  // to a block it did see. Its free chunks' stale words are read as well: a block only they point
  // to reads reachable (the price of no block reading as leaked that such a block holds).
  bool heap_roots = false;
};

// What a scan read, or why it could not be made (then no bit of its answer means anything: with
// no roots read, every block had read as lost).
struct ScanResult {
  std::uint64_t root_bytes = 0;
  ScanFailure failure = ScanFailure::kNone;
};

// `blocks` sorted by address. Sets bit i of `reachable` (zeroed by the caller, ceil(n / 64) words)
// when block i is reachable. `work` has room for n indices.
// `pools`, if not null: an interpreter's small-object pools, of which only the blocks in use are
// read (object_pools.h). `glibc_chunks`: the blocks are the C library malloc's, whose state points
// at chunk headers.
ScanResult scan_reachability(const LiveBlock* blocks, std::uint64_t n, std::uint64_t* reachable,
                                std::uint32_t* work, const DataOnlyKind* kinds, int kind_count,
                                const PoolGeometry* pools, const ThreadRoots& threads, bool glibc_chunks);

}  // namespace tleak::agent
