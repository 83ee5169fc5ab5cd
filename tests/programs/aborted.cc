// Ends by abort(), as a C++ program does after an uncaught exception (std::terminate calls it).
// argv[1]: "uncaught" (an exception nothing catches), "abort" (abort() called by the program), or
// "handled": a SIGABRT handler of the program's jumps back out of abort(), as test frameworks' do,
// and the program goes on, loses a 77 B block (AFTER) and returns 0; or "assert": a failed assert(),
// whose abort() the C library calls itself (no scan: every block unjudged).
// Before it: lost_node.h's node and its child (168 B in 2 blocks), and a vector kept from a global.
// Expected under tleak and memcheck alike: 168 B lost (the in-flight exception object is pointed to
// from inside, which memcheck calls possibly lost and tleak reachable), or 245 B when the program
// went on.
#undef NDEBUG  // the assert is the point, in any build
#include <assert.h>
#include <setjmp.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "lost_node.h"

static std::vector<int>* kept;
static sigjmp_buf back;

__attribute__((noinline)) static void lose_after() {
  char* volatile after = static_cast<char*>(malloc(77)); /* AFTER */
  memset(after, 4, 77);
}

__attribute__((noinline)) static void fail() { throw std::runtime_error("the training step failed"); }

static void jump_back(int) { siglongjmp(back, 1); }

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const std::string how = argv[1];
  kept = new std::vector<int>(250); /* KEPT */
  lose_node();
  scrub_stack();
  if (how == "uncaught") fail();
  if (how == "abort") abort();
  if (how == "assert") assert(how.empty());
  if (how != "handled") return 2;
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = jump_back;
  sigaction(SIGABRT, &action, nullptr);
  if (sigsetjmp(back, 1) == 0) abort();
  lose_after();
  scrub_stack();
  std::puts("went on");
  return 0;
}
