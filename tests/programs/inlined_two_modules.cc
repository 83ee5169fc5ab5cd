// Two modules with debug info, the program and its shared library (inlined_rows_lib.cc), each
// allocating in code the compiler inlined in its first compile unit: each frame's inlined calls
// and own line must come from its own module's debug info (the units of both start at the same
// offset of their modules' DWARF).
// Expected: growth of 4,000 B per iteration at grow_rows (ROW) and of 2,000 B at lib_grow_rows
// (inlined_rows_lib.cc: LIB_ROW), 30 iterations marked.
#include <tleak/marks.h>

#include <cstddef>
#include <cstdio>
#include <vector>

extern "C" std::size_t lib_grow_rows(int i);

static std::vector<std::vector<int>> rows;

__attribute__((noinline)) static void grow_rows(int i) {
  rows.emplace_back(1000, i); /* ROW */
}

int main() {
  rows.reserve(64);
  std::size_t lib = 0;
  for (int i = 0; i < 30; ++i) {
    grow_rows(i);
    lib = lib_grow_rows(i);
    tleak_mark_iteration();
  }
  std::printf("rows %zu %zu\n", rows.size(), lib);
  return 0;
}
