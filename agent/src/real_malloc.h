// The allocator the program would have used without tleak: the next definition of each function
// after this object (glibc's, or another preloaded allocator's), found with dlsym(RTLD_NEXT).
// dlsym itself may call calloc before the answer is known; those few requests are served from a
// static bootstrap buffer and never reach the program.
#pragma once

#include <cstddef>

namespace tleak::agent::real {

void* malloc(std::size_t size);
void free(void* ptr);
void* calloc(std::size_t count, std::size_t size);
void* realloc(void* ptr, std::size_t size);
void* reallocarray(void* ptr, std::size_t count, std::size_t size);
int posix_memalign(void** out, std::size_t alignment, std::size_t size);
void* aligned_alloc(std::size_t alignment, std::size_t size);
void* memalign(std::size_t alignment, std::size_t size);
void* valloc(std::size_t size);
void* pvalloc(std::size_t size);

// The malloc these call (the C library's, or one the program preloads).
const void* malloc_function();

// Whether `ptr` came from the bootstrap buffer (free ignores it, realloc copies out of it).
bool is_bootstrap(const void* ptr);

}  // namespace tleak::agent::real
