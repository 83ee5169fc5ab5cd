// C++ allocations that fail: new[] of 2^62 bytes thrown as std::bad_alloc and caught, an aligned
// new under a new-handler that gives up on its second call, a nothrow new that returns null.
// Prints what it saw; the same with and without tleak, with the C library's malloc or jemalloc's
// (whose operator new the agent then records at: nothing of it may change what the program sees).
#include <cstdio>
#include <new>
#include <vector>

static int handler_calls = 0;
// Read at run time: a constant this large is refused by the compiler as an array size.
static volatile std::size_t huge = std::size_t{1} << 62;
// Where every block goes, so that the compiler may not elide an allocation (clang does at -O2).
static char* volatile escaped;

int main() {
  int caught = 0;
  for (int i = 0; i < 3; ++i) {
    try {
      escaped = new char[huge];
      delete[] escaped;
    } catch (const std::bad_alloc&) {
      ++caught;
    }
  }
  std::set_new_handler([] {
    if (++handler_calls % 2 == 0) throw std::bad_alloc();
  });
  try {
    escaped = new (std::align_val_t(64)) char[huge];
  } catch (const std::bad_alloc&) {
    ++caught;
  }
  std::set_new_handler(nullptr);
  escaped = new (std::nothrow) char[huge];
  std::vector<int> kept(1000, 7);
  std::printf("caught %d, new-handler called %d times, nothrow %s, kept %d\n", caught, handler_calls,
              escaped != nullptr ? "got memory" : "null", kept[10]);
  return 0;
}
