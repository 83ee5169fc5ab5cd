// The stream the LD_PRELOAD agent sends to the `tleak` parent (its version: kProtocolVersion).
//
// The agent writes records into per-thread buffers and sends each buffer as one message on a
// SOCK_SEQPACKET socket, so a message is never interleaved with another thread's. (A buffer's
// records are mostly written into a shared message slot, and the message on the socket is then a
// SlotRecord that stands for them: MessageSlots, below.) A message is a
// sequence of records, each starting with a RecordHeader whose `size` (header included, a multiple
// of 8) says where the next one starts. Within one thread, records are in the order they happened.
// Across threads, order is restored by the timestamp: a fence (kFence, kMark, kSnapshot, kExit, kFlush)
// is written only after every thread's buffer has been sent while all buffers were locked, so
// every record before a fence in the stream happened before it and every record after, after it.
// The parent merges the records between two fences by timestamp and processes them in that order.
//
// Both sides include this header; it holds no code beyond layout, so the agent stays free of the
// engine and the engine free of the agent.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tleak::agent {

inline constexpr std::uint32_t kProtocolMagic = 0x6b61656c;  // "leak"
// 4: kPythonGapBit; 5: message slots (kSlot); 6: stacks named by their thread's cache slot, interned
// by the parent (SiteRecord); 7: the reachability answer's later pieces named (kReachMore); 8: the
// hello names a Python program's main code without a file (PythonMainCode); 9: and its script or
// -m module (python_target_bytes); 10: the exit fence names its thread, and the live list carries
// the other threads' registers and stack pointers (LiveListHeader); 11: the exit scan holds the
// other threads (kScanned); 13: a Python frame's columns (PythonFrameRecord; 12 was a trial, dropped),
// and the interpreter's finalizing told (kFinalizing); 14: an exit scan that could not be made
// says so (kScanFailed); 15: the control page says who tleak is and which process claimed the
// recording (--record), and what kind each other process is (ControlPage::OtherKind); 16: the hello
// names the allocation functions the executable defines itself (HelloRecord::shadowed), and the
// message slots say how much of each a thread has filled (MessageSlots::filled); 17: the live list
// says whether every other thread was read (LiveListHeader::flags), and the control page whether the
// agent stopped before a seccomp sandbox (ControlPage::sandboxed)
inline constexpr std::uint32_t kProtocolVersion = 18;
inline constexpr std::uint32_t kMaxMessageBytes = 64 * 1024;
inline constexpr std::uint32_t kMaxFrames = 64;
// The widest line whose columns a Python frame record names (PythonFrameRecord::column), in bytes.
inline constexpr std::int32_t kMaxPythonColumn = std::int32_t{1} << 20;
// An allocation made with less of its thread's stack left than this below malloc's frame is sent
// without its stack (the agent's stack_room.h): libunwind's walk took up to 6.1 KiB there, and 2 KiB
// more covers another build's frames and a Python thread's walk.
inline constexpr std::uint64_t kUnwindStackRoom = 8 * 1024;
// Site ids are dense, from 1: the parent gives a distinct stack one, fewer than this many (past
// them, every new stack comes under site 0, which has no frames).
inline constexpr std::uint32_t kMaxSites = 1u << 21;
// Each thread names the stacks of its allocations by a slot of its own cache of stacks: a
// SiteRecord says which stack a slot stands for from there on in that thread's records.
inline constexpr std::uint32_t kStackSlots = 1024;
// Thread buffers the agent keeps (one for each thread alive at once that allocates).
inline constexpr std::uint32_t kMaxThreadBuffers = 4096;
inline constexpr std::uint32_t kMaxNameBytes = 256;

// Environment the parent sets for the child; the agent reads it once at start-up.
inline constexpr const char* kEnvStreamFd = "TLEAK_AGENT_FD";           // socket, agent -> parent
inline constexpr const char* kEnvControlFd = "TLEAK_AGENT_CONTROL_FD";  // memfd of a ControlPage
// The same memfd as tleak holds it (/proc/PID/fd/N), for processes the program starts that closed
// the descriptors they inherited (other_processes.h).
inline constexpr const char* kEnvControlPath = "TLEAK_AGENT_CONTROL_PATH";
inline constexpr const char* kEnvPid = "TLEAK_AGENT_PID";               // the process to track
inline constexpr const char* kEnvStackDepth = "TLEAK_AGENT_STACK_DEPTH";
inline constexpr const char* kEnvSampleMicros = "TLEAK_AGENT_SAMPLE_US";  // time fence period
// --focus: the path prefix of the user's Python files (unset: every file but the library's).
inline constexpr const char* kEnvPythonFocus = "TLEAK_AGENT_PYTHON_FOCUS";
// A memfd of MessageSlots (below), agent <-> parent; without it every message goes through the socket.
inline constexpr const char* kEnvSlotsFd = "TLEAK_AGENT_SLOTS_FD";
// --record NAME: the process recorded is the first one the command starts (itself, or one of its
// descendants) that runs NAME, not the command's own (unset: the command's, kEnvPid).
inline constexpr const char* kEnvRecordName = "TLEAK_AGENT_RECORD";
// --record-fork (set to 1): the process recorded is the first copy the command's process forks
// that allocates, from that allocation on; the command's own records nothing.
inline constexpr const char* kEnvRecordFork = "TLEAK_AGENT_RECORD_FORK";
// With --record or --record-fork: the abstract socket (its name without the leading NUL) that process connects to
// if it lost the stream's descriptor, and the message slots' memfd as tleak holds it
// (/proc/PID/fd/N), which it opens then.
inline constexpr const char* kEnvStreamName = "TLEAK_AGENT_STREAM_NAME";
inline constexpr const char* kEnvSlotsPath = "TLEAK_AGENT_SLOTS_PATH";
// The longest NAME of --record (a file name: NAME_MAX).
inline constexpr std::size_t kMaxRecordNameBytes = 255;
// The longest --focus: the agent compares it with the first this many bytes of a file's name.
inline constexpr std::size_t kMaxPythonFocusBytes = 511;

enum class RecordKind : std::uint16_t {
  kHello = 1,     // HelloRecord: the first record of a process image
  kModule = 2,    // ModuleRecord: one loaded object (path, load bias, build id)
  kSite = 3,      // SiteRecord: a new interned stack, sent before any kAlloc naming it
  kAlloc = 4,     // AllocRecord
  kFree = 5,      // FreeRecord (free of an address the agent may not have seen: the parent decides)
  kFence = 6,     // FenceRecord: a time sample (every sample period)
  kMark = 7,      // FenceRecord: the program's tleak_mark_iteration()
  kSnapshot = 8,  // FenceRecord + name: the program's tleak_snapshot(name) or the parent's signal
  kExit = 9,      // FenceRecord: exit handlers ran; the agent waits for the live-block list
  kReach = 10,    // ReachRecord + bitmap: which of the listed live blocks are reachable
  kPythonFrame = 11,  // PythonFrameRecord: a new Python frame id, sent before any site naming it
  kFlush = 12,    // FenceRecord: the parent's request (ControlPage::fence_requests); orders, samples nothing
  kSlot = 13,     // SlotRecord, alone in its message: the message is in a slot of the MessageSlots
  kReachMore = 14,  // ReachMoreRecord, alone in its message: more of the kReach answer's bitmap
  kScanned = 15,  // RecordHeader alone: the exit scan has read the heap; tleak lets the other threads go
  // FenceRecord: a time sample fell due after the Python interpreter began finalizing (past its
  // atexit callbacks): what it frees from then on is its teardown, which time samples no longer follow
  kFinalizing = 16,
  // RecordHeader alone, its `reserved` a ScanFailure: the exit scan could not be made, and no answer
  // follows (tleak judges no block, and lets the other threads go)
  kScanFailed = 17,
};

// Why an exit scan could not be made (kScanFailed).
enum class ScanFailure : std::uint16_t {
  kNone = 0,         // the scan was made (never sent)
  kNoMemory = 1,     // no pages for its work: the program's address space is full (an RLIMIT_AS)
  kNoMemoryMap = 2,  // /proc's memory map of the process could not be read: its roots are unknown
  kReadRefused = 3,  // reading its memory through the kernel was refused (a seccomp filter)
};
inline constexpr std::uint16_t kMaxScanFailure = 3;

struct RecordHeader {
  RecordKind kind;
  std::uint16_t reserved;
  std::uint32_t size;  // bytes, this header included, multiple of 8
};

// The code a Python program runs as its own without a file: `python3 -c CODE`, or a program read
// from standard input (`python3 -`, or no script named). It is the user's, though not a real file:
// only the command line tells it from code made by exec() in a library (a dataclass's __init__, a
// .pth file's line), which has the same name (tleak/agent/python_files.h reads it and names it).
enum class PythonMainCode : std::uint32_t { kNone = 0, kString = 1, kStdin = 2 };

// The C allocation functions the agent interposes, in HelloRecord::shadowed's bit order. One the
// program's executable defines itself comes before the agent in the loader's order (the executable
// is looked in first, and it exports a definition the C library also has, so that the library's own
// calls reach it too): no call to it reaches the agent. (A C++ operator new of the program's own
// is not among them: most call malloc, where the agent sees the block.)
inline constexpr const char* kInterposedFunctions[] = {"malloc",         "free",          "calloc",  "realloc",
                                                       "reallocarray",   "posix_memalign", "aligned_alloc",
                                                       "memalign",       "valloc",         "pvalloc"};
inline constexpr std::uint32_t kInterposedFunctionCount =
    sizeof kInterposedFunctions / sizeof kInterposedFunctions[0];
inline constexpr std::uint32_t kShadowedMalloc = 1;  // bit 0: malloc

struct HelloRecord {
  RecordHeader header;
  std::uint32_t magic;
  std::uint32_t version;
  std::uint32_t pid;
  std::uint32_t stack_depth;
  std::uint64_t start_ns;
  std::uint64_t sample_ns;
  PythonMainCode python_main;  // the Python program's own code without a file, if any
  // A Python program's script path or -m module (python_files.h), with its NUL; 0: none.
  std::uint32_t python_target_bytes;
  // Bit i: the executable defines kInterposedFunctions[i] itself, and calls to it pass the agent by.
  std::uint32_t shadowed;
  std::uint32_t flags;  // kHello* bits
  // followed by the Python target (python_target_bytes), then the executable's path,
  // NUL-terminated, padded to 8
};

// HelloRecord::flags: a CPython process whose small objects come from pymalloc, which the agent does
// not see (python_frames.h, python_small_objects_unseen).
inline constexpr std::uint32_t kHelloPythonSmallObjectsUnseen = 1;
inline constexpr std::uint32_t kHelloKnownFlags = kHelloPythonSmallObjectsUnseen;

struct ModuleRecord {
  RecordHeader header;
  std::uint64_t start;      // lowest mapped address of its PT_LOAD segments
  std::uint64_t end;        // one past the highest
  std::uint64_t load_bias;  // dlpi_addr: file virtual address + bias = run-time address
  std::uint32_t path_bytes;  // including the NUL
  std::uint32_t build_id_bytes;
  // followed by the build id bytes, then the path, padded to 8
};

// A stack that missed its thread's cache: from here on in this thread's records, its cache slot
// `slot` stands for this stack (until another SiteRecord of the thread names the slot again). The
// parent, not the agent, tells stacks apart, by `key` (a hash of the frames that equal stacks share
// in every thread): a table of every distinct stack in the program's process was, for a program of
// hundreds of thousands of them, a cache and TLB miss at each new one (importing PyTorch: 686,000,
// about 120 ms of the program's time). The frames are written against the thread's previous site
// record when they share frames at either end: importing a library makes hundreds of thousands of
// stacks that differ from the one before in a few frames (each static initializer's own call site).
struct SiteRecord {
  RecordHeader header;
  std::uint32_t thread;  // the thread's buffer (AllocRecord::thread)
  std::uint32_t slot;    // < kStackSlots
  std::uint64_t key_a;   // the stack's hash (128 bits): equal stacks, equal keys
  std::uint64_t key_b;
  std::uint32_t depth;   // frames of the stack
  std::uint16_t prefix;  // the stack's first (innermost) `prefix` frames are the previous record's first
  std::uint16_t suffix;  // its last (outermost) `suffix` frames are the previous record's last
  // followed by depth - prefix - suffix frame words, the ones in between, innermost first: return
  // addresses, or kPythonFrameBit | a Python frame id
};

// `ns` of a record is a stamp for ordering only: the TSC where the kernel keeps time with it,
// CLOCK_MONOTONIC nanoseconds otherwise; comparable across threads either way.
// A site's frames may include Python frames: words with the top bit set, the frame's id below.
inline constexpr std::uint64_t kPythonFrameBit = std::uint64_t{1} << 63;
// A stack whose kept Python frames (at most the stack depth, the innermost) hold none of the
// user's code goes on to the innermost frame that does, after this word: Python frames left out
// here, as many as its low 32 bits say. (A Python word with this bit is no frame id.)
inline constexpr std::uint64_t kPythonGapBit = std::uint64_t{1} << 62;

struct PythonFrameRecord {
  RecordHeader header;
  std::uint32_t id;
  std::int32_t line;  // -1: the instruction has no line
  // Where on its line the instruction's expression begins and ends (UTF-8 byte offsets, the end
  // exclusive, as Python's co_positions gives them); -1: not known. Two calls on one line (a layer
  // applied to another's output) are two frames, told apart only by these.
  std::int32_t column;
  std::int32_t end_column;
  std::uint32_t file_bytes;      // including the NUL
  std::uint32_t function_bytes;  // including the NUL
  // followed by the file, then the function (qualified name), padded to 8
};

struct AllocRecord {
  RecordHeader header;
  std::uint64_t ns;
  std::uint64_t address;
  std::uint64_t size;
  std::uint32_t slot;    // the thread's cache slot of the allocation's stack (SiteRecord)
  std::uint32_t thread;  // the thread's buffer
};

struct FreeRecord {
  RecordHeader header;
  std::uint64_t ns;
  std::uint64_t address;
};

struct FenceRecord {
  RecordHeader header;
  std::uint64_t ns;
  std::uint64_t sequence;  // fences sent so far by this image, this one included
  std::uint32_t name_bytes;  // kSnapshot: the name, including the NUL; else 0
  std::uint32_t thread_id;  // kExit: the exiting thread's (gettid), which scans and reads its own registers; else 0
  // followed by the name, padded to 8
};

// Sent after the parent's live list arrives: one bit per listed block, in the list's order, set
// when the block is reachable from the roots (data and bss of every module, thread stacks and
// every other writable mapping that is not heap).
struct ReachRecord {
  RecordHeader header;  // size: this message's bytes (the record and the bitmap's first bytes)
  std::uint64_t blocks;
  std::uint64_t roots_bytes;  // bytes of root memory scanned
  // followed by the first bytes of the bitmap, ceil(blocks / 64) std::uint64_t words, up to the end
  // of this message; the rest follows in ReachMoreRecord messages
};

// More of the reachability bitmap, in order, each piece alone in its message and naming where it
// goes: a thread still running as the program exits may send records between two pieces, and they
// are told apart by this header instead of being read as bitmap.
struct ReachMoreRecord {
  RecordHeader header;   // size: this message's bytes, the piece included
  std::uint64_t offset;  // of the piece's first byte in the bitmap
  // followed by the piece, up to the end of the message
};

// The parent's answer to kExit, sent on the same socket: a header, then `blocks` pairs of
// (address, size) sorted by address, then `register_words` words: the registers of the program's
// other threads, which the parent read (roots, as each thread's stack is); then `thread_stacks`
// ThreadStack entries, one per thread read, sent only when every other thread was read.
struct LiveListHeader {
  std::uint32_t magic;
  std::uint32_t register_words;
  std::uint64_t blocks;
  std::uint32_t thread_stacks;
  std::uint32_t flags;  // kEveryThreadRead
};
// Every other thread of the program was read, and its stack pointer is among the ThreadStack
// entries (none when there is no other thread): a stack mapping none of them lies in is no living
// thread's.
inline constexpr std::uint32_t kEveryThreadRead = 1;
inline constexpr std::uint32_t kMaxRegisterWords = std::uint32_t{1} << 20;
// Where a thread stood as its registers were read: its stack pointer, and its thread pointer (the C
// library's thread descriptor, which lies at the top of a stack the library made). The exit scan
// reads that thread's stack from the stack pointer up, as memcheck does: what lies below is dead
// frames, whose stale words had kept lost blocks "reachable".
struct ThreadStack {
  std::uint64_t stack_pointer;
  std::uint64_t thread_pointer;
};
inline constexpr std::uint32_t kMaxThreadStacks = std::uint32_t{1} << 16;

// Where a thread buffer's records are written, so that a send is a SlotRecord of 16 bytes on the
// socket instead of the message itself: a memory file both sides map (kEnvSlotsFd). A thread buffer
// fills a slot it took (kSlotFilling), marks it kSlotSent and sends a SlotRecord naming it, where
// the message would have gone in the stream; the parent reads the slot as that message and frees
// it (kSlotFree). With no slot free (the parent is behind), a buffer's messages go through the
// socket, as without slots. Each message once crossed the kernel twice (the agent's send, the
// parent's receive: copies of every record, and buffers the kernel allocated and freed for each).
// States change with atomic operations only; a slot is written only by the side that holds it.
// 256 of them: two threads allocating at full speed fill 4 MiB in about 5 ms, less than the reader
// may wait for a core, and with 64 half of their messages went through the socket, both copies
// paid on the cores the program's threads need. The lowest free slot is taken, so a program the
// reader keeps up with touches only a few; one it falls behind makes both processes resident in up
// to 16 MiB of them.
inline constexpr std::uint32_t kMessageSlots = 256;
enum SlotState : std::uint32_t { kSlotFree = 0, kSlotFilling = 1, kSlotSent = 2 };
// The bytes of whole records a thread has written into the slot it fills, kept up as it writes: a
// process that ends without sending (killed, _exit) leaves them for the parent to read, where they
// were lost (a program that allocated 1,000 blocks and was killed read as holding none). A line of
// its own each: no two threads write the same one on their allocation path.
struct alignas(64) SlotFill {
  std::uint32_t bytes;
};
struct MessageSlots {
  std::uint64_t magic;       // kProtocolMagic, written by the parent
  std::uint32_t slots;       // kMessageSlots
  std::uint32_t slot_bytes;  // kMaxMessageBytes
  std::uint32_t state[kMessageSlots];  // SlotState
  SlotFill filled[kMessageSlots];
  alignas(4096) unsigned char slot[kMessageSlots][kMaxMessageBytes];
};
struct SlotRecord {
  RecordHeader header;
  std::uint32_t slot;
  std::uint32_t bytes;  // of records in the slot, from its start
};

// Shared between parent and agent (a memfd both map). The parent writes the requests, the agent
// reads them on its allocation path with one relaxed load.
// ControlPage::channel_lost: the program took the agent's socket away (closed or replaced its
// descriptor behind the C library's back), or a seccomp filter of the program's refused its send.
inline constexpr std::uint64_t kChannelTakenAway = 1;
inline constexpr std::uint64_t kChannelRefused = 2;

struct ControlPage {
  std::uint64_t magic;
  // Raised by the parent to ask for a fence soon (kFlush: --max-live needs an exact figure, or the
  // records waiting to be put in order have grown past AgentSource::wants_flush's count); the agent
  // sends one and lowers nothing: it remembers the last value it served.
  volatile std::uint64_t fence_requests;
  volatile std::uint64_t snapshot_requests;
  // Written by the agent, once (kChannelTakenAway, kChannelRefused): it could not send any more, so
  // the records since are lost and it recorded no more.
  volatile std::uint64_t channel_lost;
  // Counted by the agent: threads that allocated while every thread buffer was taken
  // (thread_buffers.h): their allocations and frees went unrecorded.
  volatile std::uint64_t untracked_threads;
  // Other processes the program started, which the agent does not record (README, "fork"): each
  // forked child, and each image one of them exec'd with the agent still preloaded, says so here
  // (an exec'd image takes over its forked child's entry: same pid). Counted past the entries.
  volatile std::uint64_t other_processes;
  enum class OtherKind : std::uint32_t {
    kExecd = 0,         // runs a program image of its own (exec'd with the agent preloaded)
    kForkedOnly = 1,    // a forked copy of the program that has not exec'd
    kNoDescriptors = 2,  // runs --record's NAME, but could reach tleak neither way (recorded_process.h)
  };
  struct OtherProcess {
    volatile std::uint32_t pid;  // written last: 0 while the entry is being filled
    OtherKind kind;
    // Its executable's path, or a Python process's script or module (recorded_process.h,
    // program_name), cut and NUL-terminated.
    char executable[152];
  };
  static constexpr int kOtherProcessEntries = 24;
  OtherProcess other[kOtherProcessEntries];
  // tleak's pid, written before the program starts: the stream's peer, which a process that would
  // claim the recording (--record) checks its inherited descriptor against.
  std::uint32_t tleak_pid;
  // --record: the pid of the process recorded, set once by that process's agent (0: none yet), and
  // kRecordedEnded by tleak once it ended.
  volatile std::uint32_t recorded_pid;
  static constexpr std::uint32_t kRecordedEnded = ~std::uint32_t{0};
  // Written by the agent, once: the program entered a seccomp sandbox that may stop the agent's
  // calls (sandbox_calls.h), and the agent sent what it had, stopped recording and closed its
  // channel before.
  volatile std::uint32_t sandboxed;
  // Counted by the agent: dlopen calls with RTLD_DEEPBIND whose library it could not bind to its own
  // functions (deep_binding.h: a file the loader looks for from the caller's place).
  volatile std::uint32_t deep_bound_unrebound;
  // Counted by the agent: those whose library it bound to its own functions once loaded, after
  // the library's constructors had run.
  volatile std::uint32_t deep_bound_rebound;
};
static_assert(sizeof(ControlPage) <= 4096, "the control page is one page");

constexpr std::uint32_t padded(std::uint32_t bytes) { return (bytes + 7u) & ~7u; }

}  // namespace tleak::agent
