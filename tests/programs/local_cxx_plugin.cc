// A C++ plugin that a C program loads RTLD_LOCAL (as Python loads its C++ extensions): its
// libstdc++ is then not in the global scope, and the agent's operator new finds it another way
// (cxx_runtime.h). Keeps `n` vectors of 100 ints in a global (reachable at exit).
#include <vector>

static std::vector<std::vector<int>*> kept;

extern "C" int make_rows(int n) {
  for (int i = 0; i < n; ++i) kept.push_back(new std::vector<int>(100)); /* ROW */
  return static_cast<int>(kept.size());
}
