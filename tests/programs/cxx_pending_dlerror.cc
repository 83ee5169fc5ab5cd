// A failed dlopen, then the program's first operator new, then dlerror(): the message must still
// be there, with or without tleak (the agent finds the C++ runtime's operator new at that first
// call, and a lookup through the loader would have reset the thread's dlerror() state).
// Expected: "handle: none, dlerror: kept" in both runs; 400 bytes reachable at exit (KEPT).
#include <dlfcn.h>

#include <cstdio>
#include <cstring>

static int* kept;

int main() {
  void* handle = dlopen("libtleak-test-no-such-library.so", RTLD_NOW);
  kept = new int[100]; /* KEPT */
  const char* error = dlerror();
  const bool ours = error != nullptr && std::strstr(error, "libtleak-test-no-such-library.so") != nullptr;
  std::printf("handle: %s, dlerror: %s\n", handle != nullptr ? "some" : "none", ours ? "kept" : "lost");
  return 0;
}
