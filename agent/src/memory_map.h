// The process's memory map as the kernel lists it, read with plain system calls (no stdio, no
// malloc): for the exit scan's roots (reachability.cc) and the files of objects loaded by a
// relative name (mapped_path.h).
#pragma once

#include <cstdint>

namespace tleak::agent {

// The map in the calling thread's view (/proc/thread-self/maps; /proc/self/maps before Linux
// 3.17): /proc/self is the main thread's, and reads empty once that thread has ended (main called
// pthread_exit and the process went on). A descriptor, or -1.
int open_memory_map();

// One line of it: "start-end perms offset dev inode   path".
struct Mapping {
  std::uint64_t start = 0, end = 0;
  bool readable = false, writable = false, is_private = false;
  // From the first '/' or '[' after the permissions to the line's end; empty when none.
  const char* path = nullptr;
  const char* path_end = nullptr;
};

// Reads the line [line, end) (without its newline) into `*out`; false if it is not a mapping's.
bool parse_mapping(const char* line, const char* end, Mapping* out);

}  // namespace tleak::agent
