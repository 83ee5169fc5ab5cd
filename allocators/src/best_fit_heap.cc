#include "tleak/detail/best_fit_heap.h"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cstdio>

#include "tleak/allocator_error.h"

namespace tleak::detail {
namespace {

std::string hex(const void* ptr) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", ptr);
  return text;
}

}  // namespace

BestFitHeap::~BestFitHeap() {
  for (Region& region : regions_) {
    if (region.starts != nullptr) release_region_map(region);
  }
}

int BestFitHeap::size_class(std::size_t size) {
  // Four classes per power of two of granules; the first three are exact (1, 2, 3 granules).
  const std::uint64_t units = size / kGranule;
  const int log2 = std::bit_width(units) - 1;
  if (log2 < 2) return static_cast<int>(units) - 1;
  const int sub = static_cast<int>((units >> (log2 - 2)) & 3);
  return std::min(3 + (log2 - 2) * 4 + sub, kClasses - 1);
}

std::uint32_t BestFitHeap::new_block() {
  if (!spare_blocks_.empty()) {
    const std::uint32_t index = spare_blocks_.back();
    spare_blocks_.pop_back();
    return index;
  }
  blocks_.push_back({});
  return static_cast<std::uint32_t>(blocks_.size() - 1);
}

void BestFitHeap::recycle(std::uint32_t index) { spare_blocks_.push_back(index); }

void BestFitHeap::link_free(std::uint32_t index) {
  Block& block = blocks_[index];
  const int cls = size_class(block.size);
  block.size_class = static_cast<std::uint8_t>(cls);
  block.free = true;
  block.free_prev = kNone;
  block.free_next = class_heads_[cls];
  if (block.free_next != kNone) blocks_[block.free_next].free_prev = index;
  class_heads_[cls] = index;
  class_bitmap_[cls / 64] |= std::uint64_t{1} << (cls % 64);
}

void BestFitHeap::unlink_free(std::uint32_t index) {
  Block& block = blocks_[index];
  const int cls = block.size_class;
  if (block.free_prev != kNone) {
    blocks_[block.free_prev].free_next = block.free_next;
  } else {
    class_heads_[cls] = block.free_next;
    if (block.free_next == kNone) class_bitmap_[cls / 64] &= ~(std::uint64_t{1} << (cls % 64));
  }
  if (block.free_next != kNone) blocks_[block.free_next].free_prev = block.free_prev;
  block.free = false;
}

std::uint32_t BestFitHeap::find_best_fit(std::size_t size) const {
  // Every block in a class above size_class(size) fits, so only the first non-empty class with a
  // fitting block needs scanning; the smallest fitting block there is the best fit overall.
  for (int cls = size_class(size); cls < kClasses;) {
    std::uint64_t word = class_bitmap_[cls / 64] >> (cls % 64);
    if (word == 0) {
      cls = (cls / 64 + 1) * 64;
      continue;
    }
    cls += std::countr_zero(word);
    std::uint32_t best = kNone;
    for (std::uint32_t i = class_heads_[cls]; i != kNone; i = blocks_[i].free_next) {
      const std::size_t candidate = blocks_[i].size;
      if (candidate >= size && (best == kNone || candidate < blocks_[best].size)) {
        best = i;
        if (candidate == size) break;
      }
    }
    if (best != kNone) return best;
    ++cls;
  }
  return kNone;
}

std::uint32_t& BestFitHeap::start_entry(const Block& block) {
  return regions_[block.region].starts[block.offset / kGranule];
}

void BestFitHeap::split(std::uint32_t index, std::size_t keep) {
  const std::uint32_t rest = new_block();  // may reallocate blocks_: index, not references
  Block& block = blocks_[index];
  blocks_[rest] = Block{block.offset + keep, block.size - keep, block.region, index, block.next,
                        kNone, kNone, true, 0};
  if (block.next != kNone) blocks_[block.next].prev = rest;
  block.next = rest;
  block.size = keep;
  start_entry(blocks_[rest]) = rest + 1;
  link_free(rest);
}

void BestFitHeap::add_region(char* base, std::size_t size) {
  const std::size_t map_bytes = size / kGranule * sizeof(std::uint32_t);
  void* map = mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (map == MAP_FAILED) {
    throw AllocatorError(AllocatorErrorKind::kOutOfMemory,
                         owner_ + ": cannot map the block index for a region of " +
                             format_bytes(static_cast<double>(size)));
  }
  std::uint32_t region_index;
  if (!spare_regions_.empty()) {
    region_index = spare_regions_.back();
    spare_regions_.pop_back();
  } else {
    regions_.push_back({});
    region_index = static_cast<std::uint32_t>(regions_.size() - 1);
  }
  regions_[region_index] =
      Region{~reinterpret_cast<std::uintptr_t>(base), size, static_cast<std::uint32_t*>(map)};
  const auto position = std::lower_bound(
      lookup_.begin(), lookup_.end(), base,
      [this](std::uint32_t r, const char* b) { return regions_[r].base() < b; });
  lookup_.insert(position, region_index);

  const std::uint32_t index = new_block();
  blocks_[index] = Block{0, size, region_index, kNone, kNone, kNone, kNone, true, 0};
  start_entry(blocks_[index]) = index + 1;
  link_free(index);
}

void* BestFitHeap::allocate(std::size_t size, std::size_t alignment, std::size_t* block_size) {
  const std::size_t need = round_up(size);
  const std::size_t slack = alignment > kGranule ? alignment - kGranule : 0;
  std::uint32_t index = find_best_fit(need + slack);
  if (index == kNone) return nullptr;
  unlink_free(index);

  if (slack != 0) {
    const auto address = reinterpret_cast<std::uintptr_t>(regions_[blocks_[index].region].base() +
                                                          blocks_[index].offset);
    const std::size_t front = ((address + alignment - 1) & ~(alignment - 1)) - address;
    if (front != 0) {
      // The front padding stays free; the aligned remainder becomes the block we hand out.
      split(index, front);
      link_free(index);
      const std::uint32_t aligned = blocks_[index].next;
      unlink_free(aligned);
      index = aligned;
    }
  }
  if (blocks_[index].size - need >= kGranule) split(index, need);

  Block& block = blocks_[index];
  block.free = false;
  *block_size = block.size;
  return regions_[block.region].base() + block.offset;
}

std::uint32_t BestFitHeap::region_of(const void* ptr) const {
  const char* p = static_cast<const char*>(ptr);
  // Most frees land in the region of the previous one; skip the search then.
  if (last_region_ < regions_.size()) {
    const Region& cached = regions_[last_region_];
    if (cached.hidden_base != 0 && p >= cached.base() && p < cached.base() + cached.size) {
      return last_region_;
    }
  }
  auto after = std::upper_bound(lookup_.begin(), lookup_.end(), p,
                                [this](const char* q, std::uint32_t r) { return q < regions_[r].base(); });
  if (after == lookup_.begin()) return kNone;
  const Region& region = regions_[*std::prev(after)];
  if (p >= region.base() + region.size) return kNone;
  last_region_ = *std::prev(after);
  return last_region_;
}

std::size_t BestFitHeap::deallocate(void* ptr) {
  const std::uint32_t region_index = region_of(ptr);
  const auto unknown = [&] {
    return AllocatorError(AllocatorErrorKind::kUnknownPointer,
                          owner_ + ": free of " + hex(ptr) + ", which this allocator never handed out");
  };
  const auto double_free = [&] {
    return AllocatorError(AllocatorErrorKind::kDoubleFree,
                          owner_ + ": double free of " + hex(ptr) + " (the block was already freed)");
  };
  if (region_index == kNone) throw unknown();
  Region& region = regions_[region_index];
  const std::size_t offset = static_cast<std::size_t>(static_cast<char*>(ptr) - region.base());
  if (offset % kGranule != 0) throw unknown();
  const std::uint32_t entry = region.starts[offset / kGranule];
  if (entry == 0) throw unknown();
  if (entry == kFreedStart || blocks_[entry - 1].free) throw double_free();

  std::uint32_t index = entry - 1;
  const std::size_t freed = blocks_[index].size;
  const std::uint32_t next = blocks_[index].next;
  if (next != kNone && blocks_[next].free) {
    unlink_free(next);
    blocks_[index].size += blocks_[next].size;
    blocks_[index].next = blocks_[next].next;
    if (blocks_[next].next != kNone) blocks_[blocks_[next].next].prev = index;
    start_entry(blocks_[next]) = kFreedStart;
    recycle(next);
  }
  const std::uint32_t prev = blocks_[index].prev;
  if (prev != kNone && blocks_[prev].free) {
    unlink_free(prev);
    blocks_[prev].size += blocks_[index].size;
    blocks_[prev].next = blocks_[index].next;
    if (blocks_[index].next != kNone) blocks_[blocks_[index].next].prev = prev;
    start_entry(blocks_[index]) = kFreedStart;
    recycle(index);
    index = prev;
  }
  link_free(index);
  return freed;
}

void BestFitHeap::release_region_map(Region& region) {
  munmap(region.starts, region.size / kGranule * sizeof(std::uint32_t));
  region.starts = nullptr;
}

std::vector<BestFitHeap::Range> BestFitHeap::take_empty_regions() {
  std::vector<Range> empty;
  for (auto it = lookup_.begin(); it != lookup_.end();) {
    Region& region = regions_[*it];
    const std::uint32_t first = region.starts[0] - 1;
    if (blocks_[first].free && blocks_[first].size == region.size) {
      unlink_free(first);
      recycle(first);
      empty.push_back({region.base(), region.size});
      release_region_map(region);
      region.hidden_base = 0;
      spare_regions_.push_back(*it);
      it = lookup_.erase(it);
    } else {
      ++it;
    }
  }
  return empty;
}

std::vector<BestFitHeap::Range> BestFitHeap::regions() const {
  std::vector<Range> all;
  for (std::uint32_t r : lookup_) all.push_back({regions_[r].base(), regions_[r].size});
  return all;
}

std::size_t BestFitHeap::largest_free_block() const {
  for (int cls = kClasses - 1; cls >= 0; --cls) {
    std::size_t largest = 0;
    for (std::uint32_t i = class_heads_[cls]; i != kNone; i = blocks_[i].free_next) {
      largest = std::max(largest, blocks_[i].size);
    }
    if (largest != 0) return largest;
  }
  return 0;
}

}  // namespace tleak::detail
