// The memory a malloc the program preloads (jemalloc: LD_PRELOAD=libjemalloc.so.2 tleak run ...)
// maps for itself: its blocks, its free space and its bookkeeping. The exit scan leaves it out of
// its roots, as it leaves out glibc's heap (a block in it is read only when reached): free space
// and bookkeeping hold the addresses of blocks long after the program let go of them, and read as
// roots they made every leaked block reachable.
//
// Such a malloc maps through the C library's mmap, which the agent interposes; glibc's maps
// internally and is never seen here. Until the agent starts, every private anonymous mapping is
// noted with its caller (the preloaded malloc's constructor runs first); at the start, the object
// that defines the program's malloc is known, and only mappings made from its code are kept.
#pragma once

#include <cstddef>

#include "agent_memory.h"
#include "code_range.h"

namespace tleak::agent {

// The interposed mmap, munmap and mremap report here. Never allocates, keeps errno, and passes
// over a call made by a signal handler that interrupted this thread inside one of these.
void allocator_mapped(const void* start, std::size_t length, int flags, const void* caller);
void allocator_unmapped(const void* start, std::size_t length);
void allocator_remapped(const void* old_start, std::size_t old_length, const void* start, std::size_t length);

// At the agent's start, with the code of the program's malloc: keeps only what that object mapped
// from now on (nothing at all when it is the C library's).
void allocator_regions_start(const CodeRange& malloc_code);
// A process the agent does not record (or a forked child): nothing more is noted.
void allocator_regions_stop();

// Whether `function` is code of the preloaded malloc (false under the C library's malloc).
bool allocator_code_holds(const void* function);

inline constexpr int kMaxAllocatorRegions = 4096;

// The regions, sorted by address (they may overlap); returns how many, at most `max`.
int allocator_regions(OwnRegion* out, int max);

}  // namespace tleak::agent
