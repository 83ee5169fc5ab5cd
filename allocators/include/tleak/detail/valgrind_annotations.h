// Every Valgrind client request tleak makes, in one place. With TLEAK_VALGRIND off at build time
// they compile to nothing; at run time the pool decides per instance whether to call them.
// Outside Valgrind each request is a few no-op instructions.
#pragma once

#include <cstddef>

#if TLEAK_VALGRIND
#include <valgrind/memcheck.h>
#include <valgrind/valgrind.h>
#endif

namespace tleak::valgrind {

inline bool running_on_valgrind() {
#if TLEAK_VALGRIND
  return RUNNING_ON_VALGRIND != 0;
#else
  return false;
#endif
}

// A pool is identified to memcheck by an address it owns; its blocks become heap blocks to the
// leak checker, so a block nobody points to is reported "definitely lost" with the stack that
// called allocate(), not the stack that mapped the chunk.
inline void create_pool(const void* pool) {
#if TLEAK_VALGRIND
  VALGRIND_CREATE_MEMPOOL(pool, 0, 0);
#else
  (void)pool;
#endif
}

inline void destroy_pool(const void* pool) {
#if TLEAK_VALGRIND
  VALGRIND_DESTROY_MEMPOOL(pool);
#else
  (void)pool;
#endif
}

inline void pool_alloc(const void* pool, const void* block, std::size_t size) {
#if TLEAK_VALGRIND
  VALGRIND_MEMPOOL_ALLOC(pool, block, size);
#else
  (void)pool, (void)block, (void)size;
#endif
}

// Also makes the block no-access, so a later read is an "Invalid read".
inline void pool_free(const void* pool, const void* block) {
#if TLEAK_VALGRIND
  VALGRIND_MEMPOOL_FREE(pool, block);
#else
  (void)pool, (void)block;
#endif
}

inline void make_noaccess(const void* addr, std::size_t size) {
#if TLEAK_VALGRIND
  VALGRIND_MAKE_MEM_NOACCESS(addr, size);
#else
  (void)addr, (void)size;
#endif
}

// memcheck's own leak figures after a leak search. memcheck reports definitely and indirectly lost
// together through client requests.
struct LeakCounts {
  unsigned long lost_bytes = 0, possibly_lost_bytes = 0, still_reachable_bytes = 0,
                suppressed_bytes = 0;
  unsigned long lost_blocks = 0, possibly_lost_blocks = 0, still_reachable_blocks = 0,
                suppressed_blocks = 0;
};

// Runs a full leak search now and returns its counts (all zero outside memcheck). Call it while
// the program still holds a heap block: memcheck skips the search when none is left.
inline LeakCounts leak_check() {
  LeakCounts counts;
#if TLEAK_VALGRIND
  VALGRIND_DO_LEAK_CHECK;
  VALGRIND_COUNT_LEAKS(counts.lost_bytes, counts.possibly_lost_bytes, counts.still_reachable_bytes,
                       counts.suppressed_bytes);
  VALGRIND_COUNT_LEAK_BLOCKS(counts.lost_blocks, counts.possibly_lost_blocks,
                             counts.still_reachable_blocks, counts.suppressed_blocks);
#endif
  return counts;
}

}  // namespace tleak::valgrind
