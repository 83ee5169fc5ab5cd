// Best-fit placement with splitting and coalescing over address ranges the owner supplies.
// Shared by the host pool (ranges are mmap'd chunks) and the simulated device (one fixed arena).
//
// The heap never touches the memory it manages: block metadata lives in a side table, and the
// block that starts at an address is found through a per-region map indexed by offset. That keeps
// device memory "opaque" and pool memory free for Valgrind to mark no-access.
//
// Free blocks sit in segregated size classes (four per power of two) with a bitmap of non-empty
// classes; within the first class that can hold the request the smallest fitting block is chosen,
// so placement is best-fit. Not synchronized: the owner locks.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tleak::detail {

class BestFitHeap {
 public:
  // Every block size and offset is a multiple of this; it is also the alignment given for free.
  static constexpr std::size_t kGranule = 64;

  struct Range {
    char* base;
    std::size_t size;
  };

  explicit BestFitHeap(std::string owner) : owner_(std::move(owner)) { class_heads_.fill(kNone); }
  ~BestFitHeap();
  BestFitHeap(const BestFitHeap&) = delete;
  BestFitHeap& operator=(const BestFitHeap&) = delete;

  static std::size_t round_up(std::size_t size) { return (size + kGranule - 1) & ~(kGranule - 1); }

  // Adds [base, base + size) as one free block. base and size must be multiples of kGranule.
  void add_region(char* base, std::size_t size);

  // The best-fitting block of round_up(size) bytes aligned to `alignment`, or nullptr if no free
  // block can hold it. *block_size receives the bytes actually taken.
  void* allocate(std::size_t size, std::size_t alignment, std::size_t* block_size);

  // Returns the block's size. Throws AllocatorError kDoubleFree or kUnknownPointer, leaving the
  // heap unchanged.
  std::size_t deallocate(void* ptr);

  // Removes every region that is entirely free and returns them for the owner to give back.
  std::vector<Range> take_empty_regions();
  // Ranges of every region still held (for an owner that must keep leaked memory mapped).
  std::vector<Range> regions() const;

  std::size_t largest_free_block() const;
  std::size_t region_count() const { return lookup_.size(); }

 private:
  static constexpr std::uint32_t kNone = UINT32_MAX;
  // Start-map entries: 0 = no block ever started here; kFreedStart = a block started here and was
  // merged away after being freed; otherwise block index + 1.
  static constexpr std::uint32_t kFreedStart = UINT32_MAX;
  static constexpr int kClasses = 136;

  struct Block {
    std::size_t offset;
    std::size_t size;
    std::uint32_t region;
    std::uint32_t prev, next;            // neighbours by address within the region
    std::uint32_t free_prev, free_next;  // links in the size-class list while free
    bool free;
    std::uint8_t size_class;  // of `size`, kept from link_free() for unlink_free()
  };
  struct Region {
    // Kept complemented: memcheck's leak scan reads every word of the heap's bookkeeping, and a
    // plain pointer to the region's start would count as a reference to the block placed there,
    // hiding its leak. Zero marks a removed region.
    std::uintptr_t hidden_base;
    std::size_t size;
    std::uint32_t* starts;  // one entry per granule, lazily backed by zero pages
    char* base() const { return reinterpret_cast<char*>(~hidden_base); }
  };

  static int size_class(std::size_t size);
  std::uint32_t new_block();
  void recycle(std::uint32_t index);
  void link_free(std::uint32_t index);
  void unlink_free(std::uint32_t index);
  std::uint32_t find_best_fit(std::size_t size) const;
  // Splits `index` so it keeps its first `keep` bytes; the rest becomes a free block.
  void split(std::uint32_t index, std::size_t keep);
  std::uint32_t& start_entry(const Block& block);
  // Index into regions_ of the region holding ptr, or kNone.
  std::uint32_t region_of(const void* ptr) const;
  void release_region_map(Region& region);

  std::string owner_;
  std::vector<Block> blocks_;
  std::vector<std::uint32_t> spare_blocks_;
  std::vector<Region> regions_;  // indexed by Block::region
  std::vector<std::uint32_t> spare_regions_;
  std::vector<std::uint32_t> lookup_;  // live region indices sorted by base address
  mutable std::uint32_t last_region_ = kNone;  // region of the last lookup, tried first
  std::array<std::uint32_t, kClasses> class_heads_{};
  std::array<std::uint64_t, (kClasses + 63) / 64> class_bitmap_{};
};

}  // namespace tleak::detail
