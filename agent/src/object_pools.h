// The pools of an interpreter's small-object allocator (CPython's pymalloc): memory it took from
// mmap and carves into blocks of one size per pool. To the exit scan such memory is a root, but
// only the blocks a pool has in use hold live objects: a freed block keeps the pointers its object
// held (a ctypes argument's address, long after the call), and the tail of a pool past the blocks
// ever handed out keeps what an earlier size class left there. The pool's own header says which
// blocks are in use, and is believed only when every field of it holds up.
#pragma once

#include <cstdint>

namespace tleak::agent {

struct PoolGeometry {
  std::uint32_t pool_bytes;    // pools lie at multiples of this, each starting with its header
  std::uint32_t first_block;   // the header's size: where the first block starts
  std::uint32_t size_quantum;  // a pool of class c holds blocks of (c + 1) * quantum bytes
  std::uint32_t classes;
};

inline constexpr std::uint32_t kMaxPoolBlocks = 1024;

// The header words read below: a pool's first block cannot start before their end.
inline constexpr std::uint32_t kPoolHeaderBytes = 48;

// The header of the pool at `pool`, whose pool_bytes are copied at `words`: the layout of
// CPython's pool_header (3.8 to 3.12): a 32-bit count of blocks in use, the first free block
// (free blocks are chained through their first word), two pool links, then 32-bit arena index,
// size class, offset of the next never-used block and the largest such offset.
//
// Returns the block size and sets bit b of `in_use` (kMaxPoolBlocks bits) for each of the
// `*blocks` blocks handed out that is in use; 0 when the header does not hold up: a size class
// out of range, offsets off the pool's block grid, a free list leaving the blocks handed out or
// visiting one twice, or a count of blocks in use other than those handed out less the free ones.
inline std::uint32_t pool_blocks_in_use(const std::uint64_t* words, std::uint64_t pool, const PoolGeometry& g,
                                        std::uint64_t* in_use, std::uint32_t* blocks) {
  const auto count = static_cast<std::uint32_t>(words[0]);
  const std::uint32_t size_class = static_cast<std::uint32_t>(words[4] >> 32);
  const auto next_offset = static_cast<std::uint32_t>(words[5]);
  const auto max_next_offset = static_cast<std::uint32_t>(words[5] >> 32);
  if (size_class >= g.classes) return 0;
  const std::uint32_t size = (size_class + 1) * g.size_quantum;
  if (size % 8 != 0 || max_next_offset != g.pool_bytes - size) return 0;
  if (next_offset < g.first_block + size || next_offset > max_next_offset + size ||
      (next_offset - g.first_block) % size != 0) {
    return 0;
  }
  const std::uint32_t handed_out = (next_offset - g.first_block) / size;
  if (handed_out > kMaxPoolBlocks || count > handed_out) return 0;
  for (std::uint32_t w = 0; w < kMaxPoolBlocks / 64; ++w) in_use[w] = 0;
  for (std::uint32_t b = 0; b < handed_out; ++b) in_use[b / 64] |= std::uint64_t{1} << (b % 64);
  std::uint32_t free = 0;
  for (std::uint64_t block = words[1]; block != 0; ++free) {
    if (block < pool + g.first_block || block >= pool + next_offset) return 0;
    const std::uint64_t offset = block - pool - g.first_block;
    if (offset % size != 0) return 0;
    const std::uint64_t b = offset / size;
    if ((in_use[b / 64] >> (b % 64) & 1) == 0) return 0;  // visited twice: a cycle
    in_use[b / 64] &= ~(std::uint64_t{1} << (b % 64));
    block = words[(block - pool) / 8];
  }
  if (handed_out - free != count) return 0;
  *blocks = handed_out;
  return size;
}

}  // namespace tleak::agent
