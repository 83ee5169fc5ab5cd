// A small program that misuses the pool on purpose, run under memcheck by pool_memcheck_test.cc.
//   leak             one 4000-byte block lost inside an annotated pool
//   leak-unannotated the same with Valgrind annotations off
//   use-after-free   a read of a freed pool block
//   clean            allocate and free, nothing wrong
#include <cstdio>
#include <cstring>
#include <string_view>

#include "tleak/detail/valgrind_annotations.h"
#include "tleak/pool_allocator.h"

namespace {

[[gnu::noinline]] void lose_a_block_in_the_pool(tleak::PoolAllocator& pool) {
  void* block = pool.allocate(4000);
  std::memset(block, 0, 4000);
  // The only pointer goes out of scope here: nothing can free the block any more.
}

[[gnu::noinline]] int read_after_free(tleak::PoolAllocator& pool) {
  auto* block = static_cast<volatile int*>(pool.allocate(256));
  block[0] = 42;
  pool.deallocate(const_cast<int*>(block));
  return block[0];
}

}  // namespace

int main(int argc, char** argv) {
  const std::string_view mode = argc > 1 ? argv[1] : "";
  tleak::PoolOptions options;
  options.valgrind_annotations = mode != "leak-unannotated";
  auto* pool = new tleak::PoolAllocator(options);
  int result = 0;
  if (mode == "leak" || mode == "leak-unannotated") {
    lose_a_block_in_the_pool(*pool);
  } else if (mode == "use-after-free") {
    result = read_after_free(*pool) == 42 ? 0 : 0;
  } else if (mode == "clean") {
    pool->deallocate(pool->allocate(1000));
  } else {
    std::fprintf(stderr, "usage: %s leak|leak-unannotated|use-after-free|clean\n", argv[0]);
    return 2;
  }
  // Ask for the leak check now, while the program still has heap blocks: memcheck skips its
  // at-exit leak search entirely when no malloc'd block is left, mempool blocks or not.
  const tleak::valgrind::LeakCounts counts = tleak::valgrind::leak_check();
  std::printf("client request: lost %lu bytes in %lu blocks\n", counts.lost_bytes, counts.lost_blocks);
  delete pool;
  return result;
}
