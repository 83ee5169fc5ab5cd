#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "agent_memory.h"
#include "allocator_regions.h"
#include "channel.h"
#include "code_range.h"
#include "control_page.h"
#include "ended_stacks.h"
#include "ending_signal.h"
#include "exit_frame.h"
#include "fast_unwind.h"
#include "late_blocks.h"
#include "libunwind_walk.h"
#include "message_slots.h"
#include "modules.h"
#include "other_processes.h"
#include "outside_signals.h"
#include "python_frames.h"
#include "reachability.h"
#include "real_malloc.h"
#include "recorded_process.h"
#include "shadowed_functions.h"
#include "site_table.h"
#include "thread_buffers.h"
#include "unwinder_signals.h"
#include "tleak/detail/stack_capture.h"

// The loader's: where the main thread's stack began (argc, then the arguments and environment).
extern "C" void* __libc_stack_end;

namespace tleak::agent {

int recording::g_stack_depth = 12;
int recording::g_walk_depth = 13;
__thread bool recording::t_inside __attribute__((tls_model("initial-exec"))) = false;
__thread std::uint32_t recording::t_recorded __attribute__((tls_model("initial-exec"))) = 0;
__thread int recording::t_pending_signal __attribute__((tls_model("initial-exec"))) = 0;

namespace {

// kExiting: from the exit fence to the exit scan's answer, the blocks other threads (still running
// as the program exits) allocate and free are recorded, and no fence is sent. kForkPending: a copy
// the fork source forked (--record-fork), whose first allocation or free may start the recording;
// kStarting while it does.
enum Status : int { kOff = 0, kOn = 1, kFinished = 2, kExiting = 3, kForkPending = 4, kStarting = 5 };

// The leaving thread's registers read as roots by its exit scan: the callee-saved ones where it
// called exit or _exit (exit_frame.h), every general one where a signal interrupted it.
constexpr int kScanRegisters = 16;
static_assert(kScanRegisters >= kExitRegisters);

// An outside signal's scan is under way on one of the threads (scan_at_outside_signal).
std::atomic<bool> g_outside_signal_scan{false};

// The status in a page of its own, which a child made without fork()'s handlers (a raw clone system
// call) sees zeroed, kOff (MADV_WIPEONFORK, at start): its copy of the thread buffers would write
// into the message slots it shares with the parent and tleak, and its records would read as the
// parent's (a raw clone child's 198 blocks were its parent's leaks). A vfork child shares the
// parent's memory and heap: it keeps the status, and its blocks are the parent's.
struct alignas(4096) StatusPage {
  std::atomic<int> status{kOff};
};
StatusPage g_status_page;
std::atomic<int>& g_status = g_status_page.status;
using recording::g_stack_depth;
using recording::g_walk_depth;
using recording::t_inside;
using recording::t_pending_signal;
std::uint64_t g_sample_ns = 100'000'000;
std::atomic<std::uint64_t> g_next_fence_ns{~0ull};
const ControlPage* g_control = nullptr;
ControlPage* g_control_page = nullptr;  // the same page, for what the agent writes into it
// --record-fork: the command's process (and each image it execs) records nothing itself; the first
// copy it forks that allocates claims the recording (claim_forked_copy), from that allocation on.
struct ForkSource {
  ControlPage* control = nullptr;
  int stream_fd = -1;
  char stream_name[128] = {};  // the listener's name, copied: the program may change its environment
};
ForkSource g_fork_source;
bool g_forked_copy = false;  // this process is such a copy, recorded
// A library loaded with RTLD_DEEPBIND was bound to the agent's functions once its constructors had
// run (deep_binding.h): what they allocated lies in the heap unseen.
std::atomic<bool> g_deep_bound_rebound{false};
std::uint64_t g_served_fences = 0, g_served_snapshots = 0;
detail::SpinLock g_fence_lock;
std::uint64_t g_fence_sequence = 0;
CodeRange g_agent_code;  // this object's own code
bool g_malloc_is_c_library = false;  // the blocks are glibc malloc's chunks (the exit scan knows their layout)
SiteTable g_python_frames;  // (code, instruction, file, name) -> Python frame id

class Inside {
 public:
  Inside() { t_inside = true; }
  ~Inside() { recording::leave_agent(0); }
  Inside(const Inside&) = delete;
  Inside& operator=(const Inside&) = delete;
};

std::uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

// Records are stamped only to be put back in order across threads. When the kernel itself keeps
// time with the TSC (it checked that the TSC is invariant and agrees across CPUs), reading it is a
// few nanoseconds against clock_gettime's tens; otherwise, clock_gettime.
bool g_use_tsc = false;
std::uint64_t g_tsc_origin = 0, g_ns_origin = 0;
std::atomic<double> g_ticks_per_ns{1.0};  // calibrated at every fence; TSCs tick at >= 1 GHz

bool kernel_uses_tsc() {
#if defined(__x86_64__)
  const int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char text[16] = {};
  const ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  return n == 4 && std::memcmp(text, "tsc\n", 4) == 0;
#else
  return false;
#endif
}

std::uint64_t stamp() {
#if defined(__x86_64__)
  if (g_use_tsc) return __rdtsc();
#endif
  return now_ns();
}

// The stamp `sample_ns` from now.
std::uint64_t stamp_after(std::uint64_t now_stamp, std::uint64_t ns) {
  if (!g_use_tsc) return now_stamp + ns;
  const std::uint64_t elapsed_ns = now_ns() - g_ns_origin;
  if (elapsed_ns > 1'000'000) {
    g_ticks_per_ns.store(static_cast<double>(now_stamp - g_tsc_origin) / static_cast<double>(elapsed_ns),
                         std::memory_order_relaxed);
  }
  return now_stamp + static_cast<std::uint64_t>(static_cast<double>(ns) * g_ticks_per_ns.load(std::memory_order_relaxed));
}

bool read_number(const char* name, std::uint64_t low, std::uint64_t high, std::uint64_t* out) {
  const char* text = getenv(name);
  if (text == nullptr || *text == '\0') return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = strtoull(text, &end, 10);
  if (errno != 0 || *end != '\0' || v < low || v > high) return false;
  *out = v;
  return true;
}

void send_record(const void* data, std::uint32_t bytes) { channel_send(data, bytes); }

// A CPython process, whose interpreter's finalizing is asked about as each time sample falls due
// (set at start-up, before any thread).
bool g_watch_finalizing = false;

// A fence is due when the sample period passed or the parent asked for one.
bool fence_due(std::uint64_t ns) {
  return ns >= g_next_fence_ns.load(std::memory_order_relaxed) ||
         (g_control != nullptr && (g_control->fence_requests != g_served_fences ||
                                   g_control->snapshot_requests != g_served_snapshots));
}

// Every thread buffer there is, locked in index order (as every fence takes them): how many.
std::uint32_t lock_all_buffers() {
  const std::uint32_t count = thread_buffer_count();
  for (std::uint32_t i = 0; i < count; ++i) thread_buffer(i)->lock.lock();
  return count;
}

void unlock_all_buffers(std::uint32_t count) {
  for (std::uint32_t i = count; i-- > 0;) thread_buffer(i)->lock.unlock();
}

void fence_locked(RecordKind kind, const char* name) {
  // Outside every buffer lock: dl_iterate_phdr may wait on a thread that waits on its buffer.
  send_modules_if_changed();
  const std::uint32_t count = lock_all_buffers();
  const std::uint64_t ns = stamp();
  // The calling thread's records go last, with the fence in the same message: one send instead
  // of two at every mark of a single-threaded program.
  ThreadBuffer* own = current_thread_buffer();
  for (std::uint32_t i = 0; i < count; ++i) {
    if (thread_buffer(i) != own) thread_buffer(i)->send();
  }
  alignas(8) unsigned char message[sizeof(FenceRecord) + kMaxNameBytes + 8];
  const std::uint32_t name_bytes =
      name == nullptr ? 0 : static_cast<std::uint32_t>(strnlen(name, kMaxNameBytes - 1)) + 1;
  const std::uint32_t size = padded(sizeof(FenceRecord) + name_bytes);
  std::memset(message, 0, size);
  auto* record = reinterpret_cast<FenceRecord*>(message);
  record->header = {kind, 0, size};
  record->ns = ns;
  record->sequence = ++g_fence_sequence;
  record->name_bytes = name_bytes;
  if (kind == RecordKind::kExit) record->thread_id = static_cast<std::uint32_t>(syscall(SYS_gettid));
  if (name_bytes > 0) std::memcpy(record + 1, name, name_bytes - 1);
  if (own != nullptr && own->index < count) {  // among the buffers locked above
    std::memcpy(own->reserve(size), message, size);  // sends first what is there if it is full
    own->send();
  } else {
    send_record(message, size);
  }
  // From here on, what other threads allocate is no part of the live list tleak makes at this
  // fence: noted as late (late_blocks.h) from the first record after their buffers are let go.
  if (kind == RecordKind::kExit) g_status.store(kExiting, std::memory_order_release);
  unlock_all_buffers(count);
  // A flush comes whenever the parent's backlog asks: the time samples keep their own pace.
  if (kind != RecordKind::kFlush) g_next_fence_ns.store(stamp_after(ns, g_sample_ns), std::memory_order_relaxed);
}

// Time fences, the parent's requests: whoever allocates when one is due sends it, unless another
// thread already is.
void serve_fences(std::uint64_t ns) {
  if (!fence_due(ns) || g_status.load(std::memory_order_relaxed) != kOn || !g_fence_lock.try_lock()) return;
  // The exit fence may have gone out while this thread came for the lock: no fence follows it.
  if (g_status.load(std::memory_order_relaxed) != kOn) {
    g_fence_lock.unlock();
    return;
  }
  if (g_control != nullptr && g_control->snapshot_requests != g_served_snapshots) {
    g_served_snapshots = g_control->snapshot_requests;
    g_served_fences = g_control->fence_requests;
    fence_locked(RecordKind::kSnapshot, "signal");
  } else if (const std::uint64_t now = stamp(); fence_due(now)) {
    // A time sample orders as well as a flush does: it answers a request made meanwhile too.
    const bool sample_due = now >= g_next_fence_ns.load(std::memory_order_relaxed);
    if (g_control != nullptr) g_served_fences = g_control->fence_requests;
    // A sample due once the interpreter finalizes would sample its teardown, which frees what the
    // program kept: it says so instead. Asked once a period, not at every allocation and free.
    const RecordKind kind = !sample_due ? RecordKind::kFlush
                            : g_watch_finalizing && python_finalizing() ? RecordKind::kFinalizing
                                                                         : RecordKind::kFence;
    fence_locked(kind, nullptr);
  }
  g_fence_lock.unlock();
}

void in_forked_child() {
  // The child must not write into the parent's stream: it runs untracked (README, "fork").
  // (allocator_regions.h stops in a child by a fork handler of its own.)
  g_status.store(kOff, std::memory_order_release);
  channel_forget();
  thread_buffers_forget();
  message_slots_forget();
  note_forked_child(g_control_page);
  g_control = g_control_page = nullptr;
}

// The longest executable path the hello carries, its NUL included (readlink of /proc/self/exe).
constexpr std::size_t kMaxPathBytes = 4096;

void send_hello(const char* path) {
  // Static, not on the stack: two paths' room (called once, at start-up, before any thread).
  alignas(8) static unsigned char message[sizeof(HelloRecord) + 2 * kMaxPathBytes + 8];
  const auto path_bytes = static_cast<std::uint32_t>(std::strlen(path)) + 1;
  // A target longer than a path can be is left out (the report is then named by the executable).
  const std::string_view target = python_process_main_target();
  const auto target_bytes = target.empty() || target.size() >= kMaxPathBytes ? 0u : static_cast<std::uint32_t>(target.size()) + 1;
  const std::uint32_t size = padded(sizeof(HelloRecord) + target_bytes + path_bytes);
  std::memset(message, 0, size);
  auto* hello = reinterpret_cast<HelloRecord*>(message);
  hello->header = {RecordKind::kHello, 0, size};
  hello->magic = kProtocolMagic;
  hello->version = kProtocolVersion;
  hello->pid = static_cast<std::uint32_t>(getpid());
  hello->stack_depth = static_cast<std::uint32_t>(g_stack_depth);
  hello->start_ns = now_ns();
  hello->sample_ns = g_sample_ns;
  hello->python_main = python_process_main_code();
  hello->python_target_bytes = target_bytes;
  hello->shadowed = shadowed_functions();
  hello->flags = python_enabled() && python_small_objects_unseen() ? kHelloPythonSmallObjectsUnseen : 0;
  auto* tail = reinterpret_cast<unsigned char*>(hello + 1);
  if (target_bytes > 0) std::memcpy(tail, target.data(), target_bytes - 1);  // its NUL: the memset's
  std::memcpy(tail + target_bytes, path, path_bytes);
  send_record(message, size);
}

// Where the calling function's frame ends below: everything from there up is its frame and its
// callers'.
[[gnu::noinline]] std::uintptr_t stack_below_caller() {
  return reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
}

// Every thread's buffer sent, then nothing more recorded (`after`: kFinished or kOff). After the exit
// scan: the records of the blocks other threads allocated and freed while it ran (threads still
// running as the program exits) go out before its answer, and nothing is recorded after it: tleak
// judges no block freed meanwhile by the answer, and none allocated meanwhile at all. (A block they
// freed without its record, dead before the scan read it, had read as a leak.)
void send_buffers_and_stop_tracking(Status after) {
  send_modules_if_changed();  // outside every buffer lock, as fence_locked says why
  g_fence_lock.lock();
  const std::uint32_t count = lock_all_buffers();
  for (std::uint32_t i = 0; i < count; ++i) thread_buffer(i)->send();
  g_status.store(after, std::memory_order_release);
  unlock_all_buffers(count);
  g_fence_lock.unlock();
}

}  // namespace

void before_sandbox(SandboxEffect effect) {
  // Not a vfork child's sandbox: it shares the agent's memory with the recorded parent.
  if (effect == SandboxEffect::kNone || g_status.load(std::memory_order_acquire) != kOn || t_inside ||
      !channel_opened_here()) {
    return;
  }
  if (effect == SandboxEffect::kMayRefuse) {
    fence(RecordKind::kFlush, nullptr);
    return;
  }
  const int saved_errno = errno;
  Inside inside;
  send_buffers_and_stop_tracking(kOff);  // tleak puts them in order at the stream's end
  if (g_control_page != nullptr) g_control_page->sandboxed = 1;
  channel_close();
  errno = saved_errno;
}

namespace {

// Instead of the answer: tleak then judges no block, and lets the other threads go.
void send_scan_failed(ScanFailure why) {
  const RecordHeader failed{RecordKind::kScanFailed, static_cast<std::uint16_t>(why), sizeof(RecordHeader)};
  send_record(&failed, sizeof failed);
}

// The parent's live list in, the reachability bitmap out. The exiting thread's stack is a root
// from `stack_from` up, and its `registers` (kScanRegisters) are roots, as are the other threads'
// registers the parent read and sent after the list.
void exit_handshake(std::uintptr_t stack_from, const std::uint64_t* registers) {
  LiveListHeader header{};
  if (!channel_receive(&header, sizeof header) || header.magic != kProtocolMagic) return;
  const std::uint64_t n = header.blocks;
  if (n > (std::uint64_t{1} << 32) || header.register_words > kMaxRegisterWords ||
      header.thread_stacks > kMaxThreadStacks) {
    return;
  }
  const std::size_t list_bytes = n * sizeof(LiveBlock) + 8;
  const std::size_t bitmap_words = (n + 63) / 64;
  const std::size_t root_words = kScanRegisters + std::size_t{header.register_words};
  auto* blocks = static_cast<LiveBlock*>(map_pages(list_bytes, true));
  auto* message = static_cast<std::uint64_t*>(map_pages(sizeof(ReachRecord) + bitmap_words * 8 + 8, true));
  auto* work = static_cast<std::uint32_t*>(map_pages(n * 4 + 8, true));
  auto* root_registers = static_cast<std::uint64_t*>(map_pages(root_words * 8, true));
  auto* thread_stacks = static_cast<ThreadStack*>(map_pages(header.thread_stacks * sizeof(ThreadStack) + 8, true));
  if (blocks == nullptr || message == nullptr || work == nullptr || root_registers == nullptr ||
      thread_stacks == nullptr) {
    send_scan_failed(ScanFailure::kNoMemory);
    return;
  }
  if (!channel_receive(blocks, n * sizeof(LiveBlock))) return;
  for (int r = 0; r < kScanRegisters; ++r) root_registers[r] = registers[r];
  if (!channel_receive(root_registers + kScanRegisters, std::size_t{header.register_words} * 8)) return;
  if (!channel_receive(thread_stacks, header.thread_stacks * sizeof(ThreadStack))) return;
  auto* record = reinterpret_cast<ReachRecord*>(message);
  std::uint64_t* bitmap = message + sizeof(ReachRecord) / 8;
  DataOnlyKind kinds[kPythonDataOnlyKinds];
  const int kind_count = python_data_only_kinds(kinds, kPythonDataOnlyKinds);
  PoolGeometry pools{};
  const bool with_pools = python_object_pools(&pools);
  // A main thread that ended while another thread went on to exit (pthread_exit) has no frames any
  // more: its stack is read only from where the loader started it, the arguments and environment
  // above. What lay below was stale, and a malloc without block headers (jemalloc) hands out blocks
  // at addresses its own bookkeeping had left there: a leaked block read reachable. (A main thread
  // that ended last exits on this very stack, read from `stack_from` as any exiting thread's.)
  const std::uintptr_t ended_main_stack =
      main_thread_ended() && !on_main_thread() ? reinterpret_cast<std::uintptr_t>(__libc_stack_end) : 0;
  // The other threads are held stopped by tleak from before it sent the list until the scan says
  // it is done (kScanned): what they allocated since the exit fence is as it will be scanned.
  constexpr std::uint64_t kMaxLateBlocks = std::uint64_t{1} << 16;
  auto* late = static_cast<LiveBlock*>(map_pages(kMaxLateBlocks * sizeof(LiveBlock), true));
  if (late == nullptr) {
    send_scan_failed(ScanFailure::kNoMemory);
    return;
  }
  const std::uint64_t late_count = late_blocks(late, kMaxLateBlocks);
  static EndedStack ended[kMaxEndedStacks];  // in the agent's bss, which the scan does not read
  const ThreadRoots threads{.stack_from = stack_from,
                            .registers = root_registers,
                            .register_count = root_words,
                            .ended_main_stack = ended_main_stack,
                            .thread_stacks = thread_stacks,
                            .thread_stack_count = header.thread_stacks,
                            .late_blocks = late,
                            .late_block_count = late_count,
                            .every_thread_read = (header.flags & kEveryThreadRead) != 0,
                            .ended_stacks = ended,
                            .ended_stack_count = ended_stacks(ended),
                            .heap_roots = g_forked_copy || g_deep_bound_rebound.load(std::memory_order_relaxed)};
  const ScanResult scanned_roots = scan_reachability(blocks, n, bitmap, work, kinds, kind_count,
                                                     with_pools ? &pools : nullptr, threads, g_malloc_is_c_library);
  if (scanned_roots.failure != ScanFailure::kNone) {
    send_scan_failed(scanned_roots.failure);
    return;
  }
  record->roots_bytes = scanned_roots.root_bytes;
  record->blocks = n;
  const RecordHeader scanned{RecordKind::kScanned, 0, sizeof(RecordHeader)};
  send_record(&scanned, sizeof scanned);  // tleak lets the other threads go on
  send_buffers_and_stop_tracking(kFinished);
  // A large bitmap goes out in message-sized pieces (ReachMoreRecord).
  const std::uint64_t bitmap_bytes = bitmap_words * 8;
  const std::uint64_t first = std::min<std::uint64_t>(bitmap_bytes, kMaxMessageBytes - sizeof(ReachRecord));
  record->header = {RecordKind::kReach, 0, static_cast<std::uint32_t>(sizeof(ReachRecord) + first)};
  if (!channel_send(message, sizeof(ReachRecord) + first)) return;
  auto* bitmap_bytes_at = reinterpret_cast<unsigned char*>(bitmap);
  for (std::uint64_t sent = first; sent < bitmap_bytes;) {
    const std::uint64_t piece = std::min<std::uint64_t>(bitmap_bytes - sent, kMaxMessageBytes - sizeof(ReachMoreRecord));
    // The piece's header goes over the end of the piece before, which is sent already.
    unsigned char* at = bitmap_bytes_at + sent - sizeof(ReachMoreRecord);
    const ReachMoreRecord more{{RecordKind::kReachMore, 0, static_cast<std::uint32_t>(sizeof(ReachMoreRecord) + piece)}, sent};
    std::memcpy(at, &more, sizeof more);
    if (!channel_send(at, sizeof more + piece)) return;
    sent += piece;
  }
}

}  // namespace

bool active() { return g_status.load(std::memory_order_relaxed) == kOn && !t_inside; }

bool tracking() {
  const int status = g_status.load(std::memory_order_relaxed);
  return (status == kOn || status == kExiting) && !t_inside;
}

// The start of the recording in a copy forked under --record-fork: claimed, unless another copy
// has been (below, beside agent_start).
bool start_forked_copy();

bool starts_recording() {
  return g_status.load(std::memory_order_relaxed) == kForkPending && start_forked_copy();
}

bool inside_agent() { return t_inside; }

bool recording_this_process() { return g_status.load(std::memory_order_acquire) == kOn; }

bool rebinds_deep_bound() { return recording_this_process() || g_fork_source.control != nullptr; }

void note_deep_bound(bool rebound) {
  if (rebound) g_deep_bound_rebound.store(true, std::memory_order_relaxed);
  // A fork source's count is its copies' to report.
  ControlPage* page = g_control_page != nullptr ? g_control_page : g_fork_source.control;
  if (page == nullptr) return;
  __atomic_add_fetch(rebound ? &page->deep_bound_rebound : &page->deep_bound_unrebound, 1, __ATOMIC_RELAXED);
}

void agent_channel_lost() {
  int on = kOn;
  g_status.compare_exchange_strong(on, kOff, std::memory_order_acq_rel);
}

PassThrough::PassThrough() : was_inside_(t_inside) { t_inside = true; }
PassThrough::~PassThrough() {
  if (was_inside_) return;
  recording::leave_agent(0);
}

namespace {

// The Python frame id of `frame`, from this thread's cache or the shared table; a new id is
// added to `fresh` so its description is sent before the site that names it.
// `depth`: the frame's place among the stack's Python frames (-1: beyond them).
std::uint32_t python_frame_id(ThreadBuffer* buffer, const PythonFrame& frame, int depth, NewPythonFrame* fresh,
                              int* fresh_count) {
  std::uint64_t file = 0, name = 0;
  python_code_identity(frame.code, &file, &name);
  const auto holds = [&](const PythonCacheEntry& e) {
    return e.id != 0 && e.code == frame.code && e.instruction == frame.instruction && e.file == file && e.name == name;
  };
  PythonCacheEntry* same_depth =
      depth >= 0 && depth < static_cast<int>(kMaxFrames) ? &buffer->python_by_depth[depth] : nullptr;
  if (same_depth != nullptr && holds(*same_depth)) return same_depth->id;
  // The cache slot from a cheap mix of code and instruction (this runs for every Python frame of
  // every allocation); the table's 128-bit key only on a miss.
  const std::uint64_t mixed = (frame.code ^ (std::uint64_t{frame.instruction} << 32)) * 0x9e3779b97f4a7c15ull;
  PythonCacheEntry& cached = buffer->python_cache[(mixed >> 40) & (ThreadBuffer::kPythonCacheEntries - 1)];
  if (holds(cached)) {
    if (same_depth != nullptr) *same_depth = cached;
    return cached.id;
  }
  const std::uint64_t words[4] = {frame.code, frame.instruction, file, name};
  const StackKey key = SiteTable::key(words, 4);
  bool is_new = false;
  const std::uint32_t id = g_python_frames.intern(key, &is_new);
  if (id == SiteTable::kOverflowSite) return 0;
  if (is_new) fresh[(*fresh_count)++] = {frame, id};
  cached = {frame.code, file, name, frame.instruction, id};
  if (same_depth != nullptr) *same_depth = cached;
  return id;
}

// Whose the frame's code is, from this thread's cache (python_code_kind reads the file name only
// on a miss).
PythonCodeKind code_kind(ThreadBuffer* buffer, const PythonFrame& frame) {
  std::uint64_t file = 0, name = 0;
  python_code_identity(frame.code, &file, &name);
  PythonKindEntry& cached =
      buffer->python_kinds[((frame.code * 0x9e3779b97f4a7c15ull) >> 40) & (ThreadBuffer::kPythonKindEntries - 1)];
  if (cached.code != frame.code || cached.file != file) cached = {frame.code, file, python_code_kind(frame.code)};
  return cached.kind;
}

// How far past the kept frames the innermost frame of the user's code is looked for.
constexpr int kUserFrameSearch = 64;

// The innermost frame of the user's code from `rest` on (within kUserFrameSearch frames, and not
// past the import machinery): writes the gap word and its id to `out` and returns 2, or 0. Apart
// (not inlined) so its frames and the file name it may read take stack only while it searches.
[[gnu::noinline]] std::uint32_t user_frame_beyond(ThreadBuffer* buffer, std::uintptr_t rest, std::uint64_t* out,
                                                  NewPythonFrame* fresh, int* fresh_count) {
  PythonFrame beyond[16];
  for (std::uint32_t skipped = 0; skipped < kUserFrameSearch && rest != 0;) {
    const int m = python_stack_beyond(beyond, 16, &rest);
    for (int i = 0; i < m; ++i, ++skipped) {
      const PythonCodeKind kind = code_kind(buffer, beyond[i]);
      if (kind == PythonCodeKind::kImportMachinery) return 0;
      if (kind == PythonCodeKind::kLibrary) continue;
      const std::uint32_t id = python_frame_id(buffer, beyond[i], -1, fresh, fresh_count);
      if (id == 0) return 0;
      out[0] = kPythonFrameBit | kPythonGapBit | skipped;
      out[1] = kPythonFrameBit | id;
      return 2;
    }
  }
  return 0;
}

// Native frames with the Python frames put where the interpreter ran them: each call of the eval
// loop (a native frame in _PyEval_EvalFrameDefault) stands for the Python frames it ran, up to
// the one it was entered with. Python frames beyond the native depth go last (they are outer).
// The interpreter's frames between a Python frame and an extension's function it called are left
// out where they went through a call dispatch function (in_call_dispatch): they only pass the call
// on, and whether a call goes through them changes as CPython 3.11 specializes the calling
// instruction after its first runs (`np.zeros(n)` in a loop: the first seven calls went through
// PyObject_Vectorcall and a trampoline, the rest straight from the eval loop), which made one line's
// allocations two sites, the first seven a "bounded" one. An operator's own function (the
// PyNumber_Multiply of `a * b`) is kept: it names what the line did.
// When the kept Python frames (the innermost, at most the stack depth) hold none of the user's
// code and more were left, the innermost frame of the user's code after them goes last, after a
// word that says how many were left out: a deep model's site still names the line of the script
// that called it, not only the library's frames.
// Whether the interpreter's frames from `native` on, up to the next frame of other code, go through
// a call dispatch function.
bool in_call_dispatch_run(const std::uintptr_t* native, int count) {
  for (int i = 0; i < count && !in_eval_loop(native[i]) && g_interpreter_code.holds(reinterpret_cast<const void*>(native[i])); ++i) {
    if (in_call_dispatch(native[i])) return true;
  }
  return false;
}

std::uint32_t with_python_frames(ThreadBuffer* buffer, const std::uintptr_t* native, int native_depth,
                                 std::uint64_t* out, NewPythonFrame* fresh, int* fresh_count) {
  PythonFrame* python = buffer->scratch.python;
  // At most as many Python frames as native ones: the innermost, where the program asked.
  std::uintptr_t rest = 0;
  const int n = python_stack(python, g_stack_depth < static_cast<int>(kMaxFrames) ? g_stack_depth : static_cast<int>(kMaxFrames), &rest);
  std::uint32_t depth = 0;
  int next = 0;
  const auto emit_activation = [&] {
    do {
      const std::uint32_t id = python_frame_id(buffer, python[next], next, fresh, fresh_count);
      if (id != 0 && depth < kMaxFrames) out[depth++] = kPythonFrameBit | id;
    } while (!python[next++].is_entry && next < n);
  };
  // The native frames kept (an eval loop's frame counts as one): at most the stack depth. Where the
  // run of the interpreter's frames just written began (-1: none), and whether it passes on a call
  // into an extension (the frame before it is one), which the eval loop's frame after it confirms.
  int kept = 0;
  int run = -1;
  bool run_into_extension = false;  // and through a call dispatch function
  for (int i = 0; i < native_depth && depth < kMaxFrames; ++i) {
    const bool eval = next < n && in_eval_loop(native[i]);
    const bool interpreter = !eval && g_interpreter_code.holds(reinterpret_cast<const void*>(native[i]));
    // Past the depth only to see whether an open run ends in the eval loop (and is left out).
    if (kept >= g_stack_depth && !(run >= 0 && run_into_extension && (eval || interpreter))) break;
    if (eval) {
      if (run >= 0 && run_into_extension) {
        kept -= static_cast<int>(depth) - run;
        depth = static_cast<std::uint32_t>(run);
      }
      run = -1;
      if (kept >= g_stack_depth) break;
      emit_activation();
      ++kept;
      continue;
    }
    if (!interpreter) {
      run = -1;
    } else if (run < 0) {
      run = static_cast<int>(depth);
      run_into_extension = depth > 0 && (out[depth - 1] & kPythonFrameBit) == 0 && in_extension(out[depth - 1]) &&
                           in_call_dispatch_run(native + i, native_depth - i);
    }
    out[depth++] = native[i];
    ++kept;
  }
  // A run still open past the depth: cut back to it.
  if (kept > g_stack_depth) depth -= static_cast<std::uint32_t>(kept - g_stack_depth);
  while (next < n && depth < kMaxFrames) emit_activation();
  // Searched only when every kept frame is a library's: a frame of the user's among them names the
  // site already, and one of the import machinery's means an import. A module's code run by an
  // import, and the static initializers of the libraries it loads, have the import machinery's
  // frames all the way out to the script's import line, which every one of their allocations would
  // walk to (importing PyTorch took 260 ms more of 1.3 s with it); their sites are named by the
  // module imported, as without the search.
  if (rest == 0 || depth + 2 > kMaxFrames) return depth;
  for (int i = 0; i < n; ++i) {
    if (code_kind(buffer, python[i]) != PythonCodeKind::kLibrary) return depth;
  }
  return depth + user_frame_beyond(buffer, rest, out + depth, fresh, fresh_count);
}

void write_python_frame(ThreadBuffer* buffer, const NewPythonFrame& f) {
  step_profile::count(step_profile::kPythonFrameRecords);
  PythonDescription& d = buffer->description;
  python_describe(f.frame, &d);
  const char* file = d.file;
  const char* function = d.function;
  const std::int32_t line = d.line;
  const auto file_bytes = static_cast<std::uint32_t>(std::strlen(file)) + 1;
  const auto function_bytes = static_cast<std::uint32_t>(std::strlen(function)) + 1;
  const std::uint32_t size = padded(sizeof(PythonFrameRecord) + file_bytes + function_bytes);
  unsigned char* at = buffer->reserve(size);
  std::memset(at, 0, size);
  auto* record = reinterpret_cast<PythonFrameRecord*>(at);
  record->header = {RecordKind::kPythonFrame, 0, size};
  record->id = f.id;
  record->line = line;
  record->column = d.column;
  record->end_column = d.end_column;
  record->file_bytes = file_bytes;
  record->function_bytes = function_bytes;
  std::memcpy(at + sizeof(PythonFrameRecord), file, file_bytes);
  std::memcpy(at + sizeof(PythonFrameRecord) + file_bytes, function, function_bytes);
}

// A stack new to the thread's cache, now what its slot stands for: written against the thread's
// previous site record where they share frames at either end.
void write_site(ThreadBuffer* buffer, std::uint32_t slot, const StackKey& key, const std::uint64_t* words,
                std::uint32_t depth) {
  std::uint32_t prefix = 0, suffix = 0;
  const std::uint32_t shorter = depth < buffer->last_depth ? depth : buffer->last_depth;
  while (prefix < shorter && words[prefix] == buffer->last_frames[prefix]) ++prefix;
  while (prefix + suffix < shorter &&
         words[depth - 1 - suffix] == buffer->last_frames[buffer->last_depth - 1 - suffix]) {
    ++suffix;
  }
  const std::uint32_t middle = depth - prefix - suffix;
  const std::uint32_t bytes = sizeof(SiteRecord) + middle * 8;
  auto* record = reinterpret_cast<SiteRecord*>(buffer->reserve(bytes));
  record->header = {RecordKind::kSite, 0, bytes};
  record->thread = buffer->index;
  record->slot = slot;
  record->key_a = key.a;
  record->key_b = key.b;
  record->depth = depth;
  record->prefix = static_cast<std::uint16_t>(prefix);
  record->suffix = static_cast<std::uint16_t>(suffix);
  std::memcpy(record + 1, words + prefix, middle * 8);
  buffer->last_depth = depth;
  std::memcpy(buffer->last_frames, words, depth * 8);
}

std::uint32_t cache_slot(const StackKey& key) { return (key.a >> 1) & (ThreadBuffer::kCacheEntries - 1); }

}  // namespace

void recording::record_captured_alloc(ThreadBuffer* buffer, const void* address, std::size_t size, int count,
                                      int saved_errno, std::uint64_t started) {
  std::uint64_t lap = started;
  step_profile::lap(step_profile::kUnwind, &lap);
  struct Leave {
    int saved_errno;
    const void* address;
    ~Leave() {
      errno = saved_errno;
      recording::leave_agent(reinterpret_cast<std::uint64_t>(address));  // the block on its way to the program
    }
  } leave{saved_errno, address};
  ++recording::t_recorded;
  if (buffer != nullptr) {
    // Past the interposed function: the first frame is where the program called it.
    const auto* frames = reinterpret_cast<const std::uintptr_t*>(buffer->scratch.raw + 1);
    int depth = count > 1 ? count - 1 : 0;
    // An operator new of the agent's that passed the call on to libstdc++'s (interpose_new.cc)
    // stays on the stack where the compiler made no tail call: it is no frame of the program's.
    StackScratch& scratch = buffer->scratch;
    std::uintptr_t* without_agent = scratch.without_agent;
    for (int k = 0; k < depth && k < 3; ++k) {
      if (!g_agent_code.holds(reinterpret_cast<const void*>(frames[k]))) continue;
      std::memcpy(without_agent, frames, k * sizeof frames[0]);
      std::memcpy(without_agent + k, frames + k + 1, (depth - k - 1) * sizeof frames[0]);
      frames = without_agent;
      --depth;
      break;
    }
    const auto* words = reinterpret_cast<const std::uint64_t*>(frames);
    auto d = static_cast<std::uint32_t>(depth);
    NewPythonFrame* fresh = scratch.fresh;
    int fresh_count = 0;
    if (python_enabled() && g_stack_depth > 0) {
      d = with_python_frames(buffer, frames, depth, scratch.words, fresh, &fresh_count);
      words = scratch.words;
    }
    step_profile::lap(step_profile::kPython, &lap);
    const StackKey key = SiteTable::key(words, d);
    step_profile::lap(step_profile::kHash, &lap);
    // The thread's own cache names the stack: no table shared with other threads is looked up, and
    // a stack it has not met is sent in full for the parent to tell apart (SiteRecord). Only this
    // thread reads and writes its cache.
    const std::uint32_t slot = cache_slot(key);
    SiteCacheEntry& cached = buffer->cache[slot];
    const bool known = cached.key == key;
    buffer->lock.lock();
    step_profile::lap(step_profile::kLock, &lap);
    for (int i = 0; i < fresh_count; ++i) write_python_frame(buffer, fresh[i]);
    if (!known) {
      write_site(buffer, slot, key, words, d);
      cached.key = key;
      step_profile::count(step_profile::kSiteRecords);
    }
    step_profile::count(step_profile::kAllocRecords);
    const std::uint64_t ns = stamp();
    auto* record = reinterpret_cast<AllocRecord*>(buffer->reserve(sizeof(AllocRecord)));
    *record = {{RecordKind::kAlloc, 0, sizeof(AllocRecord)}, ns, reinterpret_cast<std::uint64_t>(address), size,
               slot, buffer->index};
    buffer->allocated_since_send += size;
    if (buffer->allocated_since_send >= ThreadBuffer::kFlushAllocatedBytes) buffer->send();
    if (__builtin_expect(g_status.load(std::memory_order_relaxed) == kExiting, 0)) {
      late_block_allocated(reinterpret_cast<std::uint64_t>(address), size);
    }
    buffer->publish();
    buffer->lock.unlock();
    serve_fences(ns);
    step_profile::lap(step_profile::kWrite, &lap);
  }
}

std::uint64_t free_stamp() { return tracking() ? stamp() : 0; }

void record_free_at(const void* address, std::uint64_t ns) {
  if ((!tracking() && !starts_recording()) || address == nullptr) return;
  Inside inside;
  const int saved_errno = errno;
  if (ThreadBuffer* buffer = this_thread_buffer()) {
    if (ns == 0) ns = stamp();
    buffer->lock.lock();
    auto* record = reinterpret_cast<FreeRecord*>(buffer->reserve(sizeof(FreeRecord)));
    *record = {{RecordKind::kFree, 0, sizeof(FreeRecord)}, ns, reinterpret_cast<std::uint64_t>(address)};
    if (__builtin_expect(g_status.load(std::memory_order_relaxed) == kExiting, 0)) {
      late_block_freed(reinterpret_cast<std::uint64_t>(address));
    }
    buffer->publish();
    buffer->lock.unlock();
    // Frees serve fences too: a program that only frees for a while (an interpreter's teardown
    // frees hundreds of thousands of blocks at once) would otherwise leave tleak's requests for a
    // flush unanswered, and all of those records to be ordered and applied only after the exit,
    // while the program waits for its exit scan.
    serve_fences(ns);
  }
  errno = saved_errno;
}

void record_free(const void* address) { record_free_at(address, 0); }

void before_unload() {
  fast_unwind_forget_rules();
  libunwind_before_unload();
  if (!active()) return;
  Inside inside;
  const int saved_errno = errno;
  send_modules_if_changed();
  errno = saved_errno;
}

void after_unload() {
  // Threads still allocating as the program exits are walked too.
  if (tracking()) libunwind_after_unload();
}

void fence(RecordKind kind, const char* name) {
  if (!active()) return;
  Inside inside;
  const int saved_errno = errno;
  g_fence_lock.lock();
  if (g_status.load(std::memory_order_relaxed) == kOn) fence_locked(kind, name);  // not after the exit fence
  g_fence_lock.unlock();
  errno = saved_errno;
}

namespace {

// The executable's path, read once at start-up: the hello names it, --record compares it, and
// CPython's command line is read by it.
char g_executable[kMaxPathBytes];

// Recording starts: the channel `stream` adopted (`stream_connected`: a connection of the agent's
// own, closed once adopted), the rest of the agent set up, the hello sent. `forked_copy`: a copy
// of a running process (--record-fork), whose thread is wherever its parent's forking one was.
void start_recording(ControlPage* control, int stream, bool stream_connected, bool forked_copy) {
  // Before anything of the agent's own is mapped: from here on only the malloc's mappings count.
  const CodeRange malloc_code = code_range_of(real::malloc_function());
  allocator_regions_start(malloc_code);
  g_malloc_is_c_library = malloc_code.is_c_library;
  g_agent_code = code_range_of(reinterpret_cast<const void*>(&start_recording));
  std::uint64_t depth = 12, sample_us = 100'000;
  read_number(kEnvStackDepth, 0, kMaxFrames, &depth);
  read_number(kEnvSampleMicros, 1000, 3'600'000'000ull, &sample_us);
  Inside inside;
  // The stream's peer is tleak: the process's parent, unless --record found it deeper down.
  const pid_t tleak = control != nullptr && control->tleak_pid != 0 ? static_cast<pid_t>(control->tleak_pid) : getppid();
  const bool adopted = channel_open(stream, tleak, control != nullptr ? &control->channel_lost : nullptr);
  // The agent writes through its copy; a connection of its own needs no second descriptor (an image
  // this process execs connects anew).
  if (stream_connected) close(stream);
  if (!adopted) {
    allocator_regions_stop();
    return;
  }
  g_control = g_control_page = control;
  // Without slots (another tleak's parent, or none given) every message goes through the socket.
  std::uint64_t slots_fd = 0;
  if (!(read_number(kEnvSlotsFd, 0, 1 << 20, &slots_fd) && message_slots_open(static_cast<int>(slots_fd))) &&
      stream_connected) {
    // A process that lost the stream's descriptor lost this one too: opened as tleak holds it.
    message_slots_open_at(getenv(kEnvSlotsPath));
  }
  unwinder_signals_init();
  fast_unwind_init();
  std::uint64_t unwind_check_wanted = 0;
  g_check_unwind = read_number(kEnvCheckUnwind, 1, 1, &unwind_check_wanted);
  g_stack_depth = static_cast<int>(depth);
  g_walk_depth = g_stack_depth + 1;
  g_sample_ns = sample_us * 1000;
  if (!g_python_frames.init() ||
      !thread_buffers_init(control != nullptr ? &control->untracked_threads : nullptr)) {
    allocator_regions_stop();
    return;
  }
  // A forked copy's one thread may be any of its parent's: its stack's bounds are read when needed.
  if (!forked_copy) note_main_stack(reinterpret_cast<std::uintptr_t>(__libc_stack_end));
  // A CPython process (the python executable, or a program linking libpython): Python frames too.
  if (python_init()) {
    python_read_main_code(g_executable);
    g_watch_finalizing = true;
    if (g_stack_depth > 0) g_walk_depth = std::min(g_stack_depth + 1 + recording::kCallPathFrames, static_cast<int>(kMaxFrames) + 1);
  }
  // A copy: the program may change its environment's strings. tleak refuses a longer --focus.
  static char focus[kMaxPythonFocusBytes + 1];
  if (const char* given = getenv(kEnvPythonFocus); given != nullptr && std::strlen(given) < sizeof focus) {
    std::strcpy(focus, given);
    python_set_focus(focus);
  }
  add_own_image();
  exit_frame_init();
  // Registered first, so run last: after the program's own at_quick_exit handlers, as the
  // destructor runs after its exit handlers. A forked copy inherited it from its source: its start
  // runs inside an allocation, where the C library's lock of exit handlers may be held by a thread
  // of the source's that is not in the copy.
  if (!forked_copy) at_quick_exit(finish_after_exit_handlers);
  pthread_atfork(nullptr, nullptr, in_forked_child);
  // In .bss, page-aligned: past the file's last page, anonymous memory, as the advice needs. (A
  // kernel before 4.14 refuses it: only a raw clone's child then writes as the parent.)
  if (sysconf(_SC_PAGESIZE) == static_cast<long>(sizeof g_status_page)) {
    madvise(&g_status_page, sizeof g_status_page, MADV_WIPEONFORK);
  }
  g_forked_copy = forked_copy;
  g_use_tsc = kernel_uses_tsc();
  g_ns_origin = now_ns();
  g_tsc_origin = stamp();
  send_hello(g_executable);
  send_modules_if_changed();
  g_next_fence_ns.store(stamp_after(stamp(), g_sample_ns), std::memory_order_relaxed);
  stand_in_for_outside_signals();
  g_status.store(kOn, std::memory_order_release);
}

// start_recording for a process whose claim (`decision`) was accepted. A start that fails (its
// channel, or the agent's memory) gives a claim made just now back, for the next process.
void start_claimed_recording(ControlPage* control, const RecordDecision& decision, bool forked_copy) {
  start_recording(control, decision.stream, decision.connected, forked_copy);
  if (!decision.claimed || g_status.load(std::memory_order_acquire) == kOn) return;
  auto self = static_cast<std::uint32_t>(getpid());
  __atomic_compare_exchange_n(&control->recorded_pid, &self, 0u, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

// In a child the fork source just forked (a fork handler: it runs before the child's own code):
// its first allocation or free starts the recording, if no other copy has claimed it by then. A
// child that execs first allocates nothing here (its new image is another process, noted as such).
void forked_from_source() { g_status.store(kForkPending, std::memory_order_release); }

}  // namespace

bool start_forked_copy() {
  int pending = kForkPending;
  if (t_inside || !g_status.compare_exchange_strong(pending, kStarting, std::memory_order_acq_rel)) return false;
  const int saved_errno = errno;
  const RecordDecision decision = claim_forked_copy(g_fork_source.control, g_fork_source.stream_fd,
                                                    g_fork_source.stream_name[0] != '\0' ? g_fork_source.stream_name : nullptr);
  if (decision.claim == RecordClaim::kRecorded) {
    start_claimed_recording(g_fork_source.control, decision, true);
  } else {
    note_forked_child(g_fork_source.control);
  }
  // Recording, or for good not: a copy that could not start runs as any other.
  int starting = kStarting;
  g_status.compare_exchange_strong(starting, kOff, std::memory_order_acq_rel);
  errno = saved_errno;
  return g_status.load(std::memory_order_acquire) == kOn;
}

// Start-up: runs before the program's own constructors (the preloaded object is initialized right
// after the C library). Everything allocated before it passes through untracked.
__attribute__((constructor)) static void agent_start() {
  // The program's errno is its own, even before main.
  const int saved_errno = errno;
  struct Restore {
    int value;
    ~Restore() { errno = value; }
  } restore{saved_errno};
  std::uint64_t pid = 0, fd = 0, control_fd = 0;
  const bool named_pid = read_number(kEnvPid, 1, 0xffffffffu, &pid);
  const bool has_stream = read_number(kEnvStreamFd, 0, 1 << 20, &fd);
  const bool has_control_fd = read_number(kEnvControlFd, 0, 1 << 20, &control_fd);
  const ssize_t length = readlink("/proc/self/exe", g_executable, sizeof g_executable - 1);
  g_executable[length > 0 ? length : 0] = '\0';
  // Requests made before this image started (a signal while the program was still loading) are
  // served at its first allocation.
  ControlPage* control = nullptr;
  bool recorded = false;
  const int stream = has_stream ? static_cast<int>(fd) : -1;
  // The stream to adopt: the inherited socket, or under --record a connection of the agent's own.
  RecordDecision decision{RecordClaim::kOther, stream, false, false};
  auto other = ControlPage::OtherKind::kExecd;
  const bool own_process = named_pid && pid == static_cast<std::uint64_t>(getpid());
  const char* name = getenv(kEnvRecordName);
  // The control page of a process other than the one tleak started: through the descriptor it
  // inherited, or tleak's own.
  const auto find_control = [&] {
    return find_control_page(has_control_fd ? static_cast<int>(control_fd) : -1, getenv(kEnvControlPath));
  };
  // tleak run --record-fork: the command's process, or with --record NAME each process that runs
  // NAME, is a source of the copy recorded, and records nothing itself.
  if (getenv(kEnvRecordFork) != nullptr && named_pid && (name != nullptr ? runs_program(name, g_executable) : own_process)) {
    control = name != nullptr ? find_control() : has_control_fd ? map_control_page(static_cast<int>(control_fd)) : nullptr;
    allocator_regions_stop();
    if (control == nullptr) return;
    g_fork_source.control = control;
    g_fork_source.stream_fd = stream;
    if (const char* listener = getenv(kEnvStreamName); listener != nullptr && std::strlen(listener) < sizeof g_fork_source.stream_name) {
      std::strcpy(g_fork_source.stream_name, listener);
    }
    pthread_atfork(nullptr, nullptr, forked_from_source);
    at_quick_exit(finish_after_exit_handlers);  // for the copies (start_recording says why)
    return;
  }
  if (name != nullptr && named_pid) {
    // tleak run --record NAME: the process that runs NAME first, wherever the command started it.
    control = find_control();
    if (control != nullptr) {
      decision = claim_recording(control, name, stream, getenv(kEnvStreamName), g_executable);
      recorded = decision.claim == RecordClaim::kRecorded;
      if (decision.claim == RecordClaim::kNoDescriptors) other = ControlPage::OtherKind::kNoDescriptors;
    }
  } else {
    recorded = own_process && has_stream;
    if (recorded && has_control_fd) control = map_control_page(static_cast<int>(control_fd));
    // A process the recorded one started (it inherited the agent): tleak is told it exists.
    if (!recorded && named_pid && !own_process) control = find_control();
  }
  if (!recorded) {
    allocator_regions_stop();
    note_other_process(control, program_name(g_executable), other);
    if (control != nullptr) munmap(control, 4096);
    return;
  }
  start_claimed_recording(control, decision, false);
}

// The exit fence and the handshake, then the unwind check's report if asked for. The scan reads
// this thread's stack from `stack_from` up, and `registers` (kScanRegisters of them) as roots.
void finish_recording(std::uintptr_t stack_from, const std::uint64_t* registers) {
  late_blocks_begin();  // mapped before the threads' buffers are locked, not while they wait
  g_fence_lock.lock();
  fence_locked(RecordKind::kExit, nullptr);  // and the status kExiting
  g_fence_lock.unlock();
  exit_handshake(stack_from, registers);
  g_status.store(kFinished, std::memory_order_release);  // the handshake may have ended early
  report_unwind_check();
}

// After the program's own teardown (exit handlers, static destructors of the objects loaded after
// this one; or, at quick_exit, its at_quick_exit handlers): what is still allocated is either
// reachable or leaked. Fatal signals skip this; the parent then reports blocks not freed without
// telling the two apart (_exit has its own scan, before_exit_call).
void finish_after_exit_handlers() {
  // A vfork child that calls exit() (after a failed exec, where _exit was meant) runs this with the
  // parent's status: its handshake would end the parent's recording, and scan its heap mid-run.
  if (g_status.load(std::memory_order_acquire) != kOn || !channel_opened_here()) return;
  if (t_inside) {
    // exit() from a signal handler that interrupted the agent on this thread: its buffer lock is
    // held below us. No scan (the parent reports the blocks left as unjudged), no deadlock.
    g_status.store(kFinished, std::memory_order_release);
    return;
  }
  const int saved_errno = errno;
  Inside inside;
  // The stack is read from the frame of exit's handlers up, and the registers as they hold them
  // (exit_frame.h): the handlers' callees, this destructor among them, held stale words of the
  // program's earlier calls (pending_dlerror.c's lost block, read reachable in a build of the agent
  // at another optimization level). A pointer held only in a register counts, as for memcheck.
  // Where no exit() is below, the program's registers go into this frame, read from here up. The
  // agent's frames below it are not: the live list, the scan's own registers and locals hold the
  // addresses of the very blocks it judges, and once read one of them was a leaked block kept
  // "reachable".
  __builtin_unwind_init();
  std::uintptr_t without_exit_from = stack_below_caller();
  on_own_stack_from_here(
      [](const FrameContext* here, void* data) {
        std::uint64_t registers[kScanRegisters] = {};
        std::uintptr_t stack_from = *static_cast<const std::uintptr_t*>(data);
        exit_handlers_frame(here, &stack_from, registers);
        finish_recording(stack_from, registers);
      },
      &without_exit_from);
  errno = saved_errno;
}

__attribute__((destructor)) static void agent_finish() { finish_after_exit_handlers(); }

namespace {

// The scan for a process about to end inside the call the agent interposed (_exit, or a signal
// that ends it): read from the program's frame that made the call, with its registers. Signals are
// held off meanwhile: one meant to end the process (multiprocessing's terminate() of a worker that
// is already leaving) finds it gone, not halfway through the scan. `then_unblock`: the mask is the
// program's again afterwards (for the signal it sends itself, which the call then delivers);
// otherwise it stays blocked, and the C library's _exit follows.
void scan_before_leaving(bool then_unblock, std::uint64_t in_flight = 0) {
  // The same tests as agent_finish's; a thread inside the agent here is in a signal handler.
  if (g_status.load(std::memory_order_acquire) != kOn || !channel_opened_here() || t_inside) return;
  const int saved_errno = errno;
  t_inside = true;
  sigset_t every, program_mask;
  sigfillset(&every);
  real_sigprocmask(SIG_BLOCK, &every, &program_mask);
  on_own_stack_from_here(
      [](const FrameContext* here, void* data) {
        std::uint64_t registers[kScanRegisters] = {};
        registers[kExitRegisters] = *static_cast<const std::uint64_t*>(data);
        std::uintptr_t stack_from = 0;
        if (!exit_call_frame(g_agent_code, here, &stack_from, registers)) return;
        finish_recording(stack_from, registers);
      },
      &in_flight);
  if (then_unblock) real_sigprocmask(SIG_SETMASK, &program_mask, nullptr);
  // At _exit the exit wins over an outside signal that came as the scan began: the process leaves
  // as if the signal had come a moment later (exit_call.c terminated).
  if (!then_unblock) t_pending_signal = 0;
  recording::leave_agent(0);
  errno = saved_errno;
}

}  // namespace

void before_exit_call() { scan_before_leaving(false); }

void before_ending_signal(int signal) {
  if (!signal_ends_process(signal)) return;
  if (g_status.load(std::memory_order_acquire) == kOn) scan_before_leaving(true);
  // The call ends the process there and then, as the default action the program set does.
  stand_down(signal);
}

namespace {

// Whether this thread is the one to scan for an outside signal. A second signal (sent twice, as
// timeout and a shell may, to a process whose first is being scanned on another thread) waits for
// that scan, which ends the process; it does not cut it short. Bounded, should that thread never
// end it.
bool first_outside_signal() {
  if (!g_outside_signal_scan.exchange(true, std::memory_order_acq_rel)) return true;
  for (int waited_ms = 0; waited_ms < 60'000; ++waited_ms) {
    const int status = g_status.load(std::memory_order_acquire);
    if (status != kOn && status != kExiting) break;
    const timespec millisecond{0, 1'000'000};
    nanosleep(&millisecond, nullptr);
  }
  return false;
}

}  // namespace

void recording::act_on_pending_signal(std::uint64_t in_flight) {
  const int signal = t_pending_signal;
  t_pending_signal = 0;
  if (first_outside_signal()) scan_before_leaving(true, in_flight);
  end_by_signal(signal);
}

bool scan_at_outside_signal(int signal, const ucontext_t* context) {
  // Not the recorded process: a child, which a vfork made share this memory and even this thread's
  // variables (a pending signal or the flag set here would be the parent's).
  if (!channel_opened_here()) return true;
  if (t_inside) {
    t_pending_signal = signal;
    return false;
  }
  if (!first_outside_signal() || g_status.load(std::memory_order_acquire) != kOn) return true;
  Inside inside;
  struct Roots {
    std::uintptr_t stack_from = 0;
    std::uint64_t registers[kScanRegisters] = {};
  } roots;
#if defined(__x86_64__)
  const greg_t* g = context->uc_mcontext.gregs;
  int r = 0;
  for (const int name : {REG_RAX, REG_RBX, REG_RCX, REG_RDX, REG_RSI, REG_RDI, REG_RBP, REG_R8, REG_R9, REG_R10,
                         REG_R11, REG_R12, REG_R13, REG_R14, REG_R15}) {
    roots.registers[r++] = static_cast<std::uint64_t>(g[name]);
  }
  // From below the red zone: a leaf function's locals may lie in the 128 bytes under its stack
  // pointer, which the kernel stepped over for the signal's frame.
  roots.stack_from = static_cast<std::uintptr_t>(g[REG_RSP]) - 128;
#elif defined(__aarch64__)
  for (int r = 0; r < kScanRegisters; ++r) roots.registers[r] = context->uc_mcontext.regs[r];
  roots.stack_from = context->uc_mcontext.sp;
#else
  return true;
#endif
  // On a stack of the agent's own (exit_frame.h): the signal may have found the thread deep in a
  // recursion (outside_signal.c deep). `roots`, below the stack read, is not read itself.
  on_own_stack_from_here(
      [](const FrameContext*, void* data) {
        const auto* given = static_cast<const Roots*>(data);
        finish_recording(given->stack_from, given->registers);
      },
      &roots);
  return true;
}

void before_abort() {
  if (g_status.load(std::memory_order_acquire) == kOn && abort_ends_process()) scan_before_leaving(true);
}

}  // namespace tleak::agent
