// C++'s operator new and delete as the program would have called them without tleak. glibc's
// malloc needs none of this: libstdc++'s operator new calls malloc, where the agent records. A
// malloc the program preloads often defines operator new and delete itself (jemalloc, tcmalloc,
// mimalloc), and those never reach malloc: the agent then records at operator new and delete
// (interpose_new.cc), or every C++ object would be invisible to it, and the exit scan, which
// leaves that malloc's memory out of its roots, would read blocks held only by C++ objects as lost.
#pragma once

#include <atomic>

namespace tleak::agent {

// The next definition of `name` (a mangled operator new or delete): the first in the objects
// loaded after the agent, read from their symbol tables (elf_symbols.h) so that the program's
// pending dlerror() message survives; in the global scope's order, as dlsym(RTLD_NEXT) would find
// it, and also when the C++ runtime is not in the global scope (Python loads C++ extensions
// RTLD_LOCAL, and their libstdc++ with them). Only if the tables cannot tell, the loader is asked.
// Null if there is none (then nothing calls it). Found once per name; `slot` keeps it. Whether to
// record at one found this way: allocator_code_holds (allocator_regions.h), true when it is the
// preloaded malloc's.
void* find_next_cxx_function(std::atomic<void*>& slot, const char* name);
inline void* next_cxx_function(std::atomic<void*>& slot, const char* name) {
  void* found = slot.load(std::memory_order_acquire);
  return found != nullptr ? found : find_next_cxx_function(slot, name);
}

}  // namespace tleak::agent
