// The tracker: a decorator over any Allocator that records, for every block, its size, tag,
// allocation stack (interned as a SiteId), the logical time of its allocation, last use and free.
//
// Several trackers (host pool, device arena) share one TrackingContext, so they share one clock,
// one stack table and one event order. Per allocation the stack is captured before any lock; the
// lock is held only to intern it and record the block. A thread-local guard makes the tracker
// pass through its own allocations (and any from the sink), so it never records itself.
#pragma once

#include <cstdint>
#include <vector>

#include "tleak/allocator.h"
#include "tleak/detail/address_map.h"
#include "tleak/detail/spin_lock.h"
#include "tleak/logical_clock.h"
#include "tleak/stack_table.h"
#include "tleak/tracking_events.h"

namespace tleak {

struct TrackingOptions {
  // Frames kept per allocation stack; 0 records no stacks (every block gets one site).
  int stack_depth = 12;
};

class TrackingContext {
 public:
  explicit TrackingContext(TrackingOptions options = {});

  LogicalClock& clock() { return clock_; }
  // Now, as the next event would be stamped (ending a recording).
  Stamp now() const;
  const LogicalClock& clock() const { return clock_; }
  int stack_depth() const { return options_.stack_depth; }

  // Set before tracked allocations start; nullptr disconnects.
  void set_sink(EventSink* sink) { sink_ = sink; }

  // The allocators registered so far, indexed by AllocatorId (trackers register as they are made).
  std::vector<AllocatorInfo> allocators() const;

  // Frames of an interned site, innermost first (a copy: safe while others allocate).
  std::vector<std::uintptr_t> stack(SiteId site) const;
  std::size_t site_count() const;

 private:
  friend class TrackingAllocator;
  // When an event happens; each call is a new event, and each op begun since the last one counts
  // as one too (time passed there, with whatever was live and dead). Called under lock_.
  Stamp stamp() {
    const std::uint64_t op = clock_.now();
    events_ = event_at(op);
    op_at_last_event_ = op;
    return {op, clock_.iteration(), events_};
  }
  // The index the next event would get if it happened during `op`.
  std::uint64_t event_at(std::uint64_t op) const { return events_ + 1 + (op - op_at_last_event_); }
  AllocatorId register_allocator(const Allocator& inner);

  const TrackingOptions options_;
  mutable detail::SpinLock lock_;  // guards stacks_, every tracker's live table, and the sink
  StackTable stacks_;
  LogicalClock clock_;
  EventSink* sink_ = nullptr;
  std::uint64_t next_block_ = 0;
  std::uint64_t events_ = 0;
  std::uint64_t op_at_last_event_ = 0;
  std::vector<AllocatorInfo> allocators_;
};

struct TrackerCounts {
  std::uint64_t allocations = 0;
  std::uint64_t frees = 0;
  std::uint64_t uses = 0;
  std::uint64_t untracked_uses = 0;  // use() of an address this tracker did not hand out
  std::uint64_t live_blocks = 0;
  std::uint64_t live_bytes = 0;  // as requested, before the allocator rounds
  std::uint64_t peak_live_bytes = 0;
};

class TrackingAllocator final : public Allocator {
 public:
  TrackingAllocator(Allocator& inner, TrackingContext& context);

  // Records that the runtime read or wrote the block at `ptr` at the current clock. Returns false,
  // and counts it, for an address this tracker did not hand out (a caller-owned wrapped array).
  bool use(const void* ptr);

  TrackerCounts counts() const;
  // Every block allocated and not yet freed, in allocation order.
  std::vector<BlockInfo> live_blocks() const;

  Allocator& inner() { return inner_; }
  AllocatorId id() const { return id_; }
  AllocatorStats stats() const override { return inner_.stats(); }
  std::string_view name() const override { return inner_.name(); }
  MemorySpace space() const override { return inner_.space(); }

 protected:
  [[gnu::noinline]] void* do_allocate(std::size_t size, std::size_t alignment,
                                      AllocTag tag) override;
  void do_deallocate(void* ptr) override;

 private:
  Allocator& inner_;
  TrackingContext& context_;
  const AllocatorId id_;
  detail::AddressMap<BlockInfo> live_;
  TrackerCounts counts_;
};

}  // namespace tleak
