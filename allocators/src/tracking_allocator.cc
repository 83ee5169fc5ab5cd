#include "tleak/tracking_allocator.h"

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <string>

#include "tleak/detail/stack_capture.h"

namespace tleak {
namespace {

thread_local bool t_inside_tracker = false;

// Marks this thread as inside the tracker for a scope; allocations made meanwhile pass through.
class ReentryGuard {
 public:
  ReentryGuard() { t_inside_tracker = true; }
  ~ReentryGuard() { t_inside_tracker = false; }
  ReentryGuard(const ReentryGuard&) = delete;
  ReentryGuard& operator=(const ReentryGuard&) = delete;
};

}  // namespace

TrackingContext::TrackingContext(TrackingOptions options) : options_(options) {
  if (options_.stack_depth < 0 || options_.stack_depth > detail::kMaxStackDepth) {
    throw std::invalid_argument("stack depth must be between 0 and " +
                                std::to_string(detail::kMaxStackDepth) + ", got " +
                                std::to_string(options_.stack_depth));
  }
}

std::vector<std::uintptr_t> TrackingContext::stack(SiteId site) const {
  std::lock_guard lock(lock_);
  const auto frames = stacks_.frames(site);
  return {frames.begin(), frames.end()};
}

std::vector<AllocatorInfo> TrackingContext::allocators() const {
  std::lock_guard lock(lock_);
  return allocators_;
}

AllocatorId TrackingContext::register_allocator(const Allocator& inner) {
  std::lock_guard lock(lock_);
  allocators_.push_back({std::string(inner.name()), inner.space()});
  return AllocatorId(static_cast<std::uint16_t>(allocators_.size() - 1));
}

Stamp TrackingContext::now() const {
  std::lock_guard lock(lock_);
  const std::uint64_t op = clock_.now();
  return {op, clock_.iteration(), event_at(op)};
}

std::size_t TrackingContext::site_count() const {
  std::lock_guard lock(lock_);
  return stacks_.size();
}

TrackingAllocator::TrackingAllocator(Allocator& inner, TrackingContext& context)
    : inner_(inner), context_(context), id_(context.register_allocator(inner)) {}

void* TrackingAllocator::do_allocate(std::size_t size, std::size_t alignment, AllocTag tag) {
  if (t_inside_tracker) return inner_.allocate(size, alignment, tag);
  ReentryGuard guard;

  // Frames above the user: Allocator::allocate and this function.
  constexpr int kTrackerFrames = 2;
  std::uintptr_t frames[detail::kMaxStackDepth];
  const int depth = context_.options_.stack_depth == 0
                        ? 0
                        : detail::capture_stack(frames, context_.options_.stack_depth, kTrackerFrames);
  const std::span<const std::uintptr_t> stack(frames, static_cast<std::size_t>(depth));
  const std::uint64_t hash = StackTable::hash(stack);

  void* ptr = inner_.allocate(size, alignment, tag);

  std::lock_guard lock(context_.lock_);
  const Stamp now = context_.stamp();
  BlockInfo block{BlockId(context_.next_block_++), context_.stacks_.intern(stack, hash), id_,
                  ptr, size, tag, now, now};
  live_.insert(ptr, block);
  ++counts_.allocations;
  ++counts_.live_blocks;
  counts_.live_bytes += size;
  counts_.peak_live_bytes = std::max(counts_.peak_live_bytes, counts_.live_bytes);
  if (context_.sink_ != nullptr) context_.sink_->on_allocate(block);
  return ptr;
}

void TrackingAllocator::do_deallocate(void* ptr) {
  if (t_inside_tracker) return inner_.deallocate(ptr);
  ReentryGuard guard;
  {
    std::lock_guard lock(context_.lock_);
    FreeEvent event;
    if (live_.take(ptr, &event.block)) {
      ++counts_.frees;
      --counts_.live_blocks;
      counts_.live_bytes -= event.block.size;
      if (context_.sink_ != nullptr) {
        event.freed = context_.stamp();
        context_.sink_->on_free(event);
      }
    }
  }
  // Not ours (or already freed): the inner allocator names the error precisely, or accepts a block
  // that was allocated from it directly. Ours: erased above before the address can be reused.
  inner_.deallocate(ptr);
}

bool TrackingAllocator::use(const void* ptr) {
  std::lock_guard lock(context_.lock_);
  BlockInfo* block = live_.find(ptr);
  if (block == nullptr) {
    ++counts_.untracked_uses;
    return false;
  }
  block->last_use = context_.stamp();
  ++block->uses;
  ++counts_.uses;
  return true;
}

TrackerCounts TrackingAllocator::counts() const {
  std::lock_guard lock(context_.lock_);
  return counts_;
}

std::vector<BlockInfo> TrackingAllocator::live_blocks() const {
  std::vector<BlockInfo> blocks;
  {
    std::lock_guard lock(context_.lock_);
    blocks.reserve(live_.size());
    live_.for_each([&](const void*, const BlockInfo& block) { blocks.push_back(block); });
  }
  std::sort(blocks.begin(), blocks.end(),
            [](const BlockInfo& a, const BlockInfo& b) { return a.block < b.block; });
  return blocks;
}

}  // namespace tleak
