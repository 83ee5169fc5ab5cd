// A shared library whose allocations, like its program's, are in inlined library code
// (tests/programs/inlined_two_modules.cc): each module's first compile unit holds them.
// Expected: growth of 2,000 B per iteration at lib_grow_rows (inlined_rows_lib.cc: the LIB_ROW line).
#include <cstddef>
#include <vector>

static std::vector<std::vector<int>> lib_rows;

extern "C" __attribute__((noinline)) std::size_t lib_grow_rows(int i) {
  if (lib_rows.capacity() == 0) lib_rows.reserve(64);
  lib_rows.emplace_back(500, i); /* LIB_ROW */
  return lib_rows.size();
}
