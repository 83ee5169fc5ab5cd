// libunwind looks up the loaded object that holds each return address it has not seen before by
// walking every loaded object (dl_iterate_phdr) and asking each whether the address is in it: a
// program with hundreds of libraries (the PyTorch loop loads 314) pays a walk through them for each
// of the tens of thousands of addresses its import makes. While libunwind captures a stack for the
// agent, its walk is answered from a list of the objects kept in most-recently-found order: the
// object that held the last address is asked first, and it most often holds the next one (on the
// PyTorch loop the 78,900 searches took 10 ms of the agent's time instead of 48). The agent's own
// walk (frame_rules.h) asks the same way, through unwinder_iterate_objects.
//
// The list is a copy of what dl_iterate_phdr reports, and it is read and written only inside the C
// library's own dl_iterate_phdr, under the loader's lock, which also keeps every object in it
// loaded; the loader's counters of objects added and removed tell a list that is out of date,
// which is then read again first. Every other call, the program's own included, goes to the C
// library's dl_iterate_phdr as it is.
#pragma once

#include <link.h>

#include <cstddef>

namespace tleak::agent {

using PhdrCallback = int (*)(dl_phdr_info*, std::size_t, void*);

// libunwind's walk (or the agent's own), answered in most-recently-found order: the same result as the C library's walk
// (the first object the callback accepts, or the last result when none does).
int unwinder_iterate_objects(PhdrCallback callback, void* data);

// The dl_iterate_phdr the program would have called without tleak.
int real_dl_iterate_phdr(PhdrCallback callback, void* data);

}  // namespace tleak::agent
