// C++ whose allocations happen in code the compiler inlined (std::vector's allocator, at -O2): a
// frame's function is the one that holds the code, and its line must be that function's own (the
// line of the inlined call), not a library header's.
// Expected: growth of 4,000 B per iteration at grow_rows (inlined_alloc.cc: the ROW line), 30
// iterations marked.
#include <tleak/marks.h>

#include <cstdio>
#include <vector>

static std::vector<std::vector<int>> rows;

__attribute__((noinline)) static void grow_rows(int i) {
  rows.emplace_back(1000, i); /* ROW */
}

int main() {
  rows.reserve(64);
  for (int i = 0; i < 30; ++i) {
    grow_rows(i);
    tleak_mark_iteration();
  }
  std::printf("rows %zu\n", rows.size());
  return 0;
}
