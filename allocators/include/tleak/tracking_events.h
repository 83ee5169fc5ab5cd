// What the tracker tells the diagnosis engine. Only allocations and frees are sent: a block's uses
// are folded into its record as they happen and arrive with the free (or stay in the live table,
// for blocks never freed), so the event rate is the allocation rate, not the op rate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "tleak/allocator.h"
#include "tleak/ids.h"

namespace tleak {

struct Stamp {
  std::uint64_t clock = 0;      // op
  std::uint64_t iteration = 0;
  // Position in the tracker's one order of allocations, uses, frees and op boundaries: finer than
  // an op, so what happened first inside one op is known (the dead-memory timelines use it).
  std::uint64_t event = 0;
};

// What an AllocatorId stands for.
struct AllocatorInfo {
  std::string name;
  MemorySpace space = MemorySpace::kHost;
};

struct BlockInfo {
  BlockId block;
  SiteId site;
  AllocatorId allocator;  // the allocator that owns the bytes
  const void* address = nullptr;
  std::size_t size = 0;  // as requested
  AllocTag tag;
  Stamp allocated;
  Stamp last_use;  // equals `allocated` until the runtime reports a use
  std::uint32_t uses = 0;  // use() calls seen; 0 means drag cannot be measured for this block
};

struct FreeEvent {
  BlockInfo block;
  Stamp freed;
};

// Receives events in one total order, called under the tracker's lock: keep it short, and never
// allocate through a tracker from inside it.
class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void on_allocate(const BlockInfo& block) = 0;
  virtual void on_free(const FreeEvent& event) = 0;
};

}  // namespace tleak
