// C++ whose one line makes two equal calls that allocate: two nodes kept per iteration, each
// through the same std::make_unique<Node>, 100 iterations marked. Their stacks differ only in where
// on the KEEP line each call is (its column, from the debug info); the text tells the two growing
// sites apart by quoting each call with its column.
// Expected: two growing sites at the KEEP line, 96 B an iteration each (a Node).
#include <tleak/marks.h>

#include <cstdio>
#include <memory>
#include <vector>

struct Node {
  char payload[96];
};

static std::vector<std::unique_ptr<Node>> firsts, seconds;

int main() {
  firsts.reserve(100);
  seconds.reserve(100);
  for (int i = 0; i < 100; ++i) {
    auto first = std::make_unique<Node>(), second = std::make_unique<Node>(); /* KEEP */
    firsts.push_back(std::move(first));
    seconds.push_back(std::move(second));
    tleak_mark_iteration();
  }
  std::printf("kept %zu and %zu\n", firsts.size(), seconds.size());
  return 0;
}
