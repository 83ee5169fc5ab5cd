// The file mapped at an address, as the kernel names it (memory_map.h): for an object the
// program loaded by a relative name ("./plugin.so", Python's ctypes.CDLL("./libfoo.so")), whose
// name in the loader's list is that relative one, meaningful only in the program's directory at
// the time. Never allocates: read with a buffer of its own, for the module map (modules.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace tleak::agent {

// Writes the absolute path of the file mapped at `address` to `out` (NUL-terminated) and returns
// true; false if no file is mapped there, its name does not fit, or /proc is not readable. One
// caller at a time (its buffer is static): the module map's, under its lock.
bool mapped_path(std::uintptr_t address, char* out, std::size_t out_bytes);

}  // namespace tleak::agent
