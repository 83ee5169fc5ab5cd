// C++ whose one line allocates in two places of the C++ library: a map that caches a vector per
// key (never evicted) makes, at its emplace, the tree's node (with the vector's header in it) and
// the vector's copied storage. Two growing sites under one "map::emplace" at the CACHE line, whose
// paths part only in the library's own (inlined) frames.
// Expected: growth at the CACHE line of 4 x 64 floats (1,024 B) and of one map node per iteration,
// 100 iterations marked (the node's 64 B an iteration add up past the 4 KiB growth needs).
#include <tleak/marks.h>

#include <cstdio>
#include <map>
#include <vector>

static std::map<int, std::vector<float>> cache;

__attribute__((noinline)) static void remember(int key, const std::vector<float>& features) {
  cache.emplace(key, features); /* CACHE */
}

int main() {
  for (int i = 0; i < 100; ++i) {
    const std::vector<float> features(256, static_cast<float>(i));
    remember(i, features);
    tleak_mark_iteration();
  }
  std::printf("cached %zu\n", cache.size());
  return 0;
}
