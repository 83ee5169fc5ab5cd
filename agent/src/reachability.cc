#include "reachability.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "agent_memory.h"
#include "allocator_regions.h"
#include "glibc_heaps.h"
#include "granule_set.h"
#include "memory_map.h"
#include "object_pools.h"
#include "thread_stack_floor.h"
#include "untouched_pages.h"

namespace tleak::agent {
namespace {

constexpr std::uint64_t kChunkBytes = 64 * 1024;

// Pools no larger than this, in a power of two, are read whole in one run.
constexpr std::uint64_t kPoolAlignment = 16 * 1024;

// Beyond this a data-only object's size is taken for a coincidence (no bytecode is 4 GiB).
constexpr std::uint64_t kMaxPayloadUnits = std::uint64_t{1} << 32;

// A live object's reference count is at least one and no address (an immortal one's, 999,999,999 in
// CPython 3.11 and 2^32 - 1 in 3.12, included). A data-only object's header is believed only with
// such a count before its type: a block pymalloc handed out again keeps what its last object left
// wherever the new owner writes nothing, and an instance's attribute values, whose first words are
// room for an insertion order mostly unwritten, began with a freed bytes object's header (its count
// taken by the free list's link): its "payload" held the values, and their objects read as leaked
// (tests/programs/stale_object_header.py).
constexpr std::uint64_t kMaxReferenceCount = std::uint64_t{1} << 40;

// Blocks per group of the scan's two-level lookup.
constexpr std::uint64_t kGroupBlocks = 64;

// Pieces of a run to read, each a range of pages: `local` where they go in the scan's chunk,
// `remote` where they are.
struct Pieces {
  static constexpr std::uint64_t kMax = kChunkBytes / kPageBytes + 1;
  iovec local[kMax], remote[kMax];
  int count = 0;
  void add(unsigned char* into, std::uintptr_t at, std::uintptr_t to) {
    if (count > 0 && reinterpret_cast<std::uintptr_t>(remote[count - 1].iov_base) + remote[count - 1].iov_len == at) {
      local[count - 1].iov_len += to - at;
      remote[count - 1].iov_len += to - at;
    } else {
      local[count] = {into, to - at};
      remote[count] = {reinterpret_cast<void*>(at), to - at};
      ++count;
    }
  }
};

// In the agent's bss, not on the program's stack, where the scan runs: one run's pieces of each kind.
Pieces g_own_pieces, g_shared_pieces;

struct Scan {
  const LiveBlock* blocks;
  std::uint64_t n;
  std::uint64_t* reachable;
  std::uint32_t* work;
  bool glibc_chunks = false;  // the blocks are the C library malloc's (find(): its chunk headers)
  std::uint64_t work_size = 0;
  std::uint64_t lowest = 0, highest = 0;  // [lowest, highest): where any block lies
  // The address of every kGroupBlocks-th block: a search of these stays in the cache, and leaves
  // one group of contiguous blocks to search (a search of all blocks missed the cache at every
  // step past the first few: this ran for every word of the roots and reached blocks that looks
  // like a heap address).
  const std::uint64_t* group_starts = nullptr;
  std::uint64_t groups = 0;
  // The granules of the blocks, or null (no room for it): most words are turned away here.
  const GranuleSet* granules = nullptr;

  // The block containing `value`, or n.
  std::uint64_t find(std::uint64_t value) const {
    if (value < lowest || value >= highest) return n;
    if (granules != nullptr && !granules->contains(value)) return n;
    std::uint64_t lo = 0, hi = n;  // first block starting after value
    if (group_starts != nullptr) {
      std::uint64_t g_lo = 0, g_hi = groups;  // first group starting after value
      while (g_lo < g_hi) {
        const std::uint64_t mid = (g_lo + g_hi) / 2;
        if (group_starts[mid] <= value) g_lo = mid + 1; else g_hi = mid;
      }
      if (g_lo == 0) return n;
      lo = (g_lo - 1) * kGroupBlocks;
      hi = g_lo * kGroupBlocks < n ? g_lo * kGroupBlocks : n;
    }
    while (lo < hi) {
      const std::uint64_t mid = (lo + hi) / 2;
      if (blocks[mid].address <= value) lo = mid + 1; else hi = mid;
    }
    if (lo == 0) return n;
    const LiveBlock& b = blocks[lo - 1];
    if (value == b.address) return lo - 1;
    if (value >= b.address + b.size) return n;
    // The C library's malloc keeps the addresses of chunk headers (its top chunk's, its bins'
    // free chunks') in its own state; the header of the chunk after a block lies in the block's
    // last 8 bytes when its size is 1 to 8 bytes past a multiple of 16. Such a word is the
    // allocator's, not the program's: read as a pointer, it kept a lost block reachable (the last
    // block carved from the top chunk).
    if (glibc_chunks && value == next_glibc_chunk(b)) return n;
    return lo - 1;
  }

  // Where glibc's chunk after block `b` starts (its own chunk: a 16-byte header, then the block,
  // the size rounded up with 8 bytes of overhead to a multiple of 16, at least 32).
  static std::uint64_t next_glibc_chunk(const LiveBlock& b) {
    std::uint64_t chunk = (b.size + 8 + 15) & ~std::uint64_t{15};
    if (chunk < 32) chunk = 32;
    return b.address - 16 + chunk;
  }

  const DataOnlyKind* kinds = nullptr;
  int kind_count = 0;
  // The lowest of the kinds' type addresses, and how far above it the highest lies: one compare
  // turns away nearly every word that is none of them (the loop over the kinds was a quarter of a
  // PyTorch program's scan).
  std::uint64_t type_low = 0, type_span = 0;
  // Where the next run of a root region starts, when not straight after the last: at an object
  // whose header or payload the end of the run cut.
  std::uint64_t resume_at = 0;

  void mark(std::uint64_t at) {
    if (reachable[at / 64] >> (at % 64) & 1) return;
    reachable[at / 64] |= std::uint64_t{1} << (at % 64);
    work[work_size++] = static_cast<std::uint32_t>(at);
  }

  // `count` words copied from `address`: a whole heap block, or one run of a root region that
  // goes on to `limit`.
  void words(const std::uint64_t* w, std::uint64_t count, std::uint64_t address, std::uint64_t limit,
             bool whole_block) {
    for (std::uint64_t i = 0; i < count; ++i) {
      const std::uint64_t at = find(w[i]);
      if (at != n) {
        mark(at);
      } else if (kind_count > 0 && i > 0 && w[i] - type_low <= type_span) {
        i = past_data_only_payload(w, i, count, address, limit, whole_block);
      }
    }
  }

  // If w[i] is the type word of a data-only object: marks what the rest of its header points to
  // and returns the index of the payload's last word. Otherwise i.
  std::uint64_t past_data_only_payload(const std::uint64_t* w, std::uint64_t i, std::uint64_t count,
                                       std::uint64_t address, std::uint64_t limit, bool whole_block) {
    int k = 0;
    while (k < kind_count && w[i] != kinds[k].type) ++k;
    if (k == kind_count || w[i - 1] == 0 || w[i - 1] >= kMaxReferenceCount) return i;
    const std::uint64_t object = address + 8 * (i - 1);
    const std::uint64_t run_end = whole_block ? limit : address + 8 * count;  // what can be read
    // Cut by the end of the run (frozen objects lie side by side, and one always straddles a
    // chunk): the next run starts at the object, if that is progress.
    const auto cut = [&] {
      if (whole_block || object == address || run_end >= limit) return i;
      resume_at = object;
      return count - 1;
    };
    if (i + 1 >= count) return cut();
    std::uint64_t when = i;
    for (;; ++k) {  // the first kind of this type whose condition holds
      if (k == kind_count || w[i] != kinds[k].type) return i;
      if (kinds[k].when_mask == 0) break;
      when = i - 1 + kinds[k].when_offset / 8;
      if (when >= count) return cut();
      if ((w[when] & kinds[k].when_mask) == kinds[k].when_value) break;
    }
    const DataOnlyKind& kind = kinds[k];
    if (whole_block && (kind.fixed_units != 0 || object != address)) return i;
    const std::uint64_t units = kind.fixed_units != 0 ? kind.fixed_units : w[i + 1];
    if (units == 0 || units > kMaxPayloadUnits) return i;
    const std::uint64_t payload = object + kind.data_offset;
    const std::uint64_t payload_end = payload + units * kind.unit_bytes;
    const std::uint64_t object_end = payload_end + kind.terminator;
    if (object_end > limit || (whole_block && (object_end + 7) / 8 != (limit + 7) / 8)) return i;
    if (object_end > run_end) return cut();
    const auto* bytes = reinterpret_cast<const unsigned char*>(w);  // from `address`
    for (std::uint64_t b = payload_end - address; b < object_end - address; ++b) {
      if (bytes[b] != 0) return i;
    }
    if (kind.ascii) {
      for (std::uint64_t b = payload - address; b < payload_end - address; ++b) {
        if (bytes[b] >= 0x80) return i;
      }
    }
    // The rest of the header, less the words that told the kind: a size, a str's state (32 bits
    // of flags, followed by 32 that were never written and hold whatever the memory held).
    const std::uint64_t first = (payload - address) / 8;
    for (std::uint64_t j = kind.fixed_units != 0 ? i + 1 : i + 2; j < first; ++j) {
      const std::uint64_t at = j == when ? n : find(w[j]);
      if (at != n) mark(at);
    }
    return (payload_end - address + 7) / 8 - 1;
  }

  // An interpreter's small-object pools, or null: in a root region, only their blocks in use.
  const PoolGeometry* pools = nullptr;
  std::uint64_t pool_in_use[kMaxPoolBlocks / 64] = {};

  // One run of a root region, less what pools in it do not use.
  void root_run(const std::uint64_t* w, std::uint64_t count, std::uint64_t address, std::uint64_t limit) {
    std::uint64_t from = 0;  // words before it are read
    if (pools != nullptr) {
      const std::uint64_t pool_bytes = pools->pool_bytes;
      for (std::uint64_t pool = (address + pool_bytes - 1) / pool_bytes * pool_bytes;
           pool + pool_bytes <= address + 8 * count; pool += pool_bytes) {
        const std::uint64_t at = (pool - address) / 8;
        std::uint32_t handed_out = 0;
        const std::uint32_t size = pool_blocks_in_use(w + at, pool, *pools, pool_in_use, &handed_out);
        if (size == 0) continue;
        if (at > from) words(w + from, at - from, address + 8 * from, pool, false);
        for (std::uint32_t b = 0; b < handed_out; ++b) {
          if ((pool_in_use[b / 64] >> (b % 64) & 1) == 0) continue;
          const std::uint64_t block = pool + pools->first_block + std::uint64_t{b} * size;
          words(w + (block - address) / 8, size / 8, block, block + size, false);
        }
        from = at + pool_bytes / 8;
      }
    }
    if (from < count) words(w + from, count - from, address + 8 * from, limit, false);
  }

  // Memory that may vanish or fault under us (another thread's mappings, big blocks that are
  // their own mappings): read through the kernel, which answers EFAULT instead of SIGSEGV.
  std::uint64_t* chunk = nullptr;  // 64 KiB of the agent's own pages: never taken for a root
  pid_t self = 0;
  UntouchedPages untouched{};
  // /proc/self/mem, for the anonymous pages this process shares with another (untouched_pages.h);
  // -1: those too through process_vm_readv.
  int memory_fd = -1;
  bool run_touched = true;  // whether the last read_run() found a page the program touched
  // The kernel refused the reads themselves (a seccomp filter on process_vm_readv), not a page:
  // no root can be read, and every block would read as lost.
  bool refused = false;

  // Reads `own` (this process's pages) through process_vm_readv. Returns where the first page that
  // failed begins, or 0 if none did.
  std::uintptr_t read_own(const Pieces& own) {
    if (own.count == 0) return 0;
    const ssize_t got = process_vm_readv(self, own.local, static_cast<unsigned long>(own.count), own.remote,
                                         static_cast<unsigned long>(own.count), 0);
    if (got < 0 && (errno == EPERM || errno == ENOSYS || errno == EACCES)) refused = true;
    // A read stops at the first page that failed: what lies before it counts.
    std::uint64_t left = got > 0 ? static_cast<std::uint64_t>(got) : 0;
    for (int i = 0; i < own.count; ++i) {
      if (left < own.remote[i].iov_len) return reinterpret_cast<std::uintptr_t>(own.remote[i].iov_base) + left;
      left -= own.remote[i].iov_len;
    }
    return 0;
  }

  // Reads `shared` (pages shared with another process) through /proc/self/mem. Returns where the
  // first page that failed begins, or 0 if none did.
  std::uintptr_t read_shared(const Pieces& shared) {
    for (int i = 0; i < shared.count; ++i) {
      const auto at = reinterpret_cast<std::uintptr_t>(shared.remote[i].iov_base);
      std::uint64_t done = 0;
      while (done < shared.remote[i].iov_len) {
        const ssize_t got = pread(memory_fd, static_cast<unsigned char*>(shared.local[i].iov_base) + done,
                                  shared.remote[i].iov_len - done, static_cast<off_t>(at + done));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return at + done;
        done += static_cast<std::uint64_t>(got);
      }
    }
    return 0;
  }

  // Copies [start, start + bytes) into `chunk`, pages the program never touched as the zeros they
  // hold (read, they would cost a fault each). Returns how many bytes from `start` were read.
  std::uint64_t read_run(std::uintptr_t start, std::uint64_t bytes) {
    Pieces& own = g_own_pieces;
    Pieces& shared = g_shared_pieces;
    own.count = shared.count = 0;
    auto* into = reinterpret_cast<unsigned char*>(chunk);
    for (std::uintptr_t at = start; at < start + bytes;) {
      const std::uintptr_t page_end = (at / kPageBytes + 1) * kPageBytes;
      const std::uintptr_t to = page_end < start + bytes ? page_end : start + bytes;
      if (untouched.never_touched(at)) {
        std::memset(into + (at - start), 0, to - at);
      } else if (memory_fd >= 0 && untouched.shared_anonymous(at)) {
        shared.add(into + (at - start), at, to);
      } else {
        own.add(into + (at - start), at, to);
      }
      at = to;
    }
    run_touched = own.count + shared.count > 0;
    const std::uintptr_t own_failed = read_own(own), shared_failed = read_shared(shared);
    const std::uintptr_t failed = own_failed == 0 ? shared_failed
                                  : shared_failed == 0 ? own_failed
                                                       : std::min(own_failed, shared_failed);
    return failed == 0 ? bytes : failed - start;
  }

  void region_checked(std::uintptr_t start, std::uintptr_t end) {
    start = (start + 7) & ~std::uintptr_t{7};
    while (start + 8 <= end && !refused) {
      // Runs end on a multiple of kPoolAlignment, so that no pool straddles two.
      std::uint64_t bytes = kChunkBytes - start % kPoolAlignment;
      if (bytes > end - start) bytes = end - start;
      const std::uint64_t got = read_run(start, bytes) & ~std::uint64_t{7};
      if (got == 0) {
        start = (start + kPageBytes) & ~(kPageBytes - 1);  // skip the page that failed
        continue;
      }
      resume_at = 0;
      if (run_touched) root_run(chunk, got / 8, start, end);
      if (resume_at != 0) {
        start = resume_at;
        continue;
      }
      start += got;
    }
  }

  std::uint64_t first_block_at_or_after(std::uint64_t address) const {
    std::uint64_t lo = 0, hi = n;
    while (lo < hi) {
      const std::uint64_t mid = (lo + hi) / 2;
      if (blocks[mid].address < address) lo = mid + 1; else hi = mid;
    }
    return lo;
  }

  // A root range minus the live blocks inside it: a big block is often its own mapping, and the
  // kernel merges it with a neighbouring anonymous mapping (an interpreter's arena) into one.
  void gaps(std::uintptr_t from, std::uintptr_t to) {
    for (std::uint64_t i = first_block_at_or_after(from); i < n && blocks[i].address < to && from < to; ++i) {
      if (blocks[i].address > from) region_checked(from, blocks[i].address);
      const std::uint64_t block_end = blocks[i].address + blocks[i].size;
      if (block_end > from) from = block_end;
    }
    // A block that starts before `from` and reaches into the range.
    if (from < to) {
      const std::uint64_t before = first_block_at_or_after(from);
      if (before > 0 && blocks[before - 1].address + blocks[before - 1].size > from) {
        from = blocks[before - 1].address + blocks[before - 1].size;
      }
    }
    if (from < to) region_checked(from, to);
  }

  void flood() {
    while (work_size > 0) {
      const LiveBlock& b = blocks[work[--work_size]];
      if (b.size >= (1u << 17)) {
        region_checked(b.address, b.address + b.size);
      } else {
        words(reinterpret_cast<const std::uint64_t*>(b.address), b.size / 8, b.address, b.address + b.size, true);
      }
    }
  }
};

bool starts_with(const char* s, const char* prefix) { return std::strncmp(s, prefix, std::strlen(prefix)) == 0; }

// Shared memory the program mapped, by the name the kernel shows: an anonymous shared mapping, a
// memory file (but tleak's own: its control page and message slots), a POSIX object in /dev/shm,
// a System V segment. Roots as private memory is, as memcheck reads them: a block whose only pointer
// lay there read as leaked (tests/programs/shared_roots.c). A regular file mapped shared is not read
// (it may be a dataset of gigabytes, paged in from disk by the reading).
bool is_shared_memory(const char* path) {
  return starts_with(path, "/dev/zero") || starts_with(path, "/dev/shm/") || starts_with(path, "/SYSV") ||
         (starts_with(path, "/memfd:") && !starts_with(path, "/memfd:tleak-"));
}

// The root bytes read; 0 and `*failure` set if the roots could not be known.
[[gnu::noinline]] std::uint64_t scan_roots(Scan& scan, const ThreadRoots& threads, ScanFailure* failure) {
  const std::uintptr_t stack_pointer = threads.stack_from, ended_main_stack = threads.ended_main_stack;
  // The map read with plain syscalls into agent pages: no stdio, no malloc. The calling thread's
  // view: /proc/self is the main thread's, and reads empty once that thread has ended (main called
  // pthread_exit and another thread exit): the scan then had no roots and every block read as lost.
  constexpr std::size_t kMapsBytes = 8 << 20;
  char* maps = static_cast<char*>(map_pages(kMapsBytes, true));
  if (maps == nullptr) {
    *failure = ScanFailure::kNoMemory;
    return 0;
  }
  std::size_t length = 0;
  const int fd = open_memory_map();
  if (fd >= 0) {
    for (ssize_t got; length + 1 < kMapsBytes &&
                      (got = read(fd, maps + length, kMapsBytes - 1 - length)) > 0;) {
      length += static_cast<std::size_t>(got);
    }
    close(fd);
  }
  // Not one mapping read (no descriptor left, no /proc): without the roots, every block would read
  // as lost.
  if (length == 0) {
    unmap_pages(maps, kMapsBytes);
    *failure = ScanFailure::kNoMemoryMap;
    return 0;
  }
  maps[length] = '\0';
  // Left out of the roots: the agent's own memory (its tables hold every block's address) and a
  // preloaded malloc's (its free space and bookkeeping hold addresses of blocks let go of; its
  // blocks are read only when reached, as glibc's heap is). Sorted by start; they may overlap.
  static OwnRegion own[kMaxOwnRegions + kMaxAllocatorRegions];  // in the agent's bss, itself an own region
  int own_count = own_regions(own, kMaxOwnRegions);
  const int allocator_count = allocator_regions(own + own_count, kMaxAllocatorRegions);
  own_count += allocator_count;
  // std::sort, not a merge: std::inplace_merge asks operator new for room (a C++ runtime in a C program).
  std::sort(own, own + own_count, [](const OwnRegion& a, const OwnRegion& b) { return a.start < b.start; });
  std::uint64_t scanned = 0;
  for (char* line = maps; *line != '\0';) {
    char* next = std::strchr(line, '\n');
    if (next != nullptr) *next = '\0';
    Mapping m;
    const bool parsed = parse_mapping(line, next != nullptr ? next : line + std::strlen(line), &m);
    line = next != nullptr ? next + 1 : line + std::strlen(line);
    if (!parsed || !m.readable || !m.writable) continue;
    const char* path = m.path;  // NUL-terminated above
    const bool shared_memory = is_shared_memory(path);
    if (!m.is_private && !shared_memory) continue;
    if ((starts_with(path, "[heap]") && !threads.heap_roots) || starts_with(path, "[vvar]") ||
        starts_with(path, "[vsyscall]") || (starts_with(path, "/dev/") && !shared_memory)) {
      continue;
    }
    const std::uint64_t start = m.start, end = m.end;
    // glibc's per-thread arenas are 64 MiB-aligned mappings: heap, whose free chunks hold stale
    // pointers. Its blocks are scanned only when reached.
    if (!threads.heap_roots && start % (std::uint64_t{64} << 20) == 0 && scan.first_block_at_or_after(start) < scan.n &&
        scan.blocks[scan.first_block_at_or_after(start)].address < end) {
      continue;
    }
    // Another thread's stack: from its stack pointer up.
    std::uint64_t from = other_thread_stack_floor(threads.thread_stacks, threads.thread_stack_count, stack_pointer,
                                                  start, end, starts_with(path, "[stack]"));
    // The calling thread's stack: only what is live, above the scanner's own frame.
    if (stack_pointer >= start && stack_pointer < end) from = stack_pointer;
    // A main thread that ended (pthread_exit) left its frames behind, stale: only the program's
    // arguments, environment and auxiliary vector above them are still the process's.
    if (ended_main_stack >= start && ended_main_stack < end && ended_main_stack > from) from = ended_main_stack;
    // A stack no living thread stands in, left by a thread that ended: from where that thread left off.
    if (from == start && threads.every_thread_read) {
      from = ended_thread_stack_floor(threads.ended_stacks, threads.ended_stack_count, threads.thread_stacks,
                                      threads.thread_stack_count, stack_pointer, start, end);
    }
    // [from, to) minus the regions left out (above).
    const auto read = [&](std::uint64_t at, std::uint64_t to) {
      for (int r = 0; r < own_count && at < to; ++r) {
        if (own[r].end <= at || own[r].start >= to) continue;
        if (own[r].start > at) {
          scan.gaps(at, own[r].start);
          scanned += own[r].start - at;
        }
        at = own[r].end;
      }
      if (at < to) {
        scan.gaps(at, to);
        scanned += to - at;
      }
    };
    // Minus glibc's heaps, wherever one begins in the mapping (glibc_heaps.h).
    if (scan.glibc_chunks && !threads.heap_roots) {
      for (std::uint64_t at = (start + kGlibcHeapAlignment - 1) / kGlibcHeapAlignment * kGlibcHeapAlignment;
           at < end && at >= start; at += kGlibcHeapAlignment) {
        const std::uint64_t heap = glibc_heap_at(at, end);
        if (heap == 0) continue;
        if (at > from) read(from, at);
        from = std::max(from, at + heap);
      }
    }
    if (from < end) read(from, end);
  }
  unmap_pages(maps, kMapsBytes);
  return scanned;
}

}  // namespace

ScanResult scan_reachability(const LiveBlock* blocks, std::uint64_t n, std::uint64_t* reachable,
                             std::uint32_t* work, const DataOnlyKind* kinds, int kind_count,
                             const PoolGeometry* pools, const ThreadRoots& threads, bool glibc_chunks) {
  Scan scan{.blocks = blocks, .n = n, .reachable = reachable, .work = work, .glibc_chunks = glibc_chunks,
            .kinds = kinds, .kind_count = kind_count};
  if (kind_count > 0) {
    std::uint64_t high = kinds[0].type;
    scan.type_low = kinds[0].type;
    for (int k = 1; k < kind_count; ++k) {
      scan.type_low = kinds[k].type < scan.type_low ? kinds[k].type : scan.type_low;
      high = kinds[k].type > high ? kinds[k].type : high;
    }
    scan.type_span = high - scan.type_low;
  }
  // This thread, not the process: the main thread's memory view is gone once it has ended.
  scan.self = static_cast<pid_t>(syscall(SYS_gettid));
  scan.untouched.open();
  scan.memory_fd = open("/proc/thread-self/mem", O_RDONLY | O_CLOEXEC);
  if (scan.memory_fd < 0) scan.memory_fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);  // before Linux 3.17
  if (pools != nullptr && pools->pool_bytes <= kPoolAlignment && kPoolAlignment % pools->pool_bytes == 0 &&
      pools->pool_bytes % 8 == 0 && pools->first_block % 8 == 0 && pools->first_block >= kPoolHeaderBytes) {
    scan.pools = pools;
  }
  scan.chunk = static_cast<std::uint64_t*>(map_pages(kChunkBytes));
  if (scan.chunk == nullptr) {
    scan.untouched.close();
    if (scan.memory_fd >= 0) close(scan.memory_fd);
    return {0, ScanFailure::kNoMemory};
  }
  std::uint64_t* group_starts = nullptr;
  const std::uint64_t groups = (n + kGroupBlocks - 1) / kGroupBlocks;
  if (n > 0) {
    scan.lowest = blocks[0].address;
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::uint64_t end = blocks[i].address + (blocks[i].size > 0 ? blocks[i].size : 1);
      if (end > scan.highest) scan.highest = end;
    }
    // Without room for the index, the plain search over all blocks answers the same.
    group_starts = static_cast<std::uint64_t*>(map_pages(groups * 8));
    if (group_starts != nullptr) {
      for (std::uint64_t g = 0; g < groups; ++g) group_starts[g] = blocks[g * kGroupBlocks].address;
      scan.group_starts = group_starts;
      scan.groups = groups;
    }
  }
  // Past 4 TiB of blocks the set would take tens of megabytes of the program's memory: then none
  // (the search alone answers the same).
  constexpr std::uint64_t kMaxGranules = std::uint64_t{1} << 22;
  std::uint64_t granule_count = 0;
  for (std::uint64_t i = 0; i < n && granule_count <= kMaxGranules; ++i) {
    granule_count += GranuleSet::granules_of(blocks[i].address, blocks[i].size);
  }
  const bool with_granules = granule_count <= kMaxGranules;
  const std::uint64_t granule_slots = with_granules ? GranuleSet::capacity_for(granule_count) : 0;
  auto* granule_memory = with_granules ? static_cast<std::uint64_t*>(map_pages(granule_slots * 8)) : nullptr;
  GranuleSet granules(granule_memory, granule_slots);
  if (granule_memory != nullptr) {
    for (std::uint64_t i = 0; i < n; ++i) granules.add(blocks[i].address, blocks[i].size);
    scan.granules = &granules;
  }
  ScanResult result;
  std::uint64_t roots = scan_roots(scan, threads, &result.failure);
  if (scan.refused && result.failure == ScanFailure::kNone) result.failure = ScanFailure::kReadRefused;
  for (std::uint64_t b = 0; result.failure == ScanFailure::kNone && b < threads.late_block_count; ++b) {
    const LiveBlock& late = threads.late_blocks[b];
    scan.region_checked(late.address, late.address + late.size);
    roots += late.size;
  }
  if (result.failure == ScanFailure::kNone) {
    for (std::uint64_t r = 0; r < threads.register_count; ++r) {
      if (const std::uint64_t at = scan.find(threads.registers[r]); at != n) scan.mark(at);
    }
    scan.flood();
    result.root_bytes = roots;
  }
  unmap_pages(scan.chunk, kChunkBytes);
  if (group_starts != nullptr) unmap_pages(group_starts, groups * 8);
  if (granule_memory != nullptr) unmap_pages(granule_memory, granule_slots * 8);
  scan.untouched.close();
  if (scan.memory_fd >= 0) close(scan.memory_fd);
  return result;
}

}  // namespace tleak::agent
