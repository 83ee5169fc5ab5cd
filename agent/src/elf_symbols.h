// A function's definition found by reading the loaded objects' own symbol tables, the way the
// dynamic loader does, without calling it: dlsym() and dlopen() reset the calling thread's dlerror()
// state, and a program whose error is pending when the agent first looks something up would find
// it gone (a failed dlopen, then the first operator new, then dlerror(): "(none)" under tleak).
#pragma once

struct dl_phdr_info;

namespace tleak::agent {

// The first definition of the function `name` (global or weak, its default version) in the
// objects loaded after the one holding `self`, in load order, which at start-up is the order of
// the global scope that dlsym(RTLD_NEXT) searches, and later also reaches objects loaded with
// RTLD_LOCAL. nullptr if none defines it (or it is an indirect function, which only the loader
// may resolve). Takes the loader's lock for listing the objects; allocates nothing.
void* find_function_after(const void* self, const char* name);
// The first definition of `name` in load order, the executable's first: the one the global scope
// binds a call to. nullptr as above.
void* find_function_first(const char* name);
// The definition of `name` in one loaded object (dl_iterate_phdr's `info`; nullptr if it has
// none): a hash lookup, quick to say no, without the loader's lock.
void* function_defined_in(const dl_phdr_info* info, const char* name);

}  // namespace tleak::agent
