// What an interrupted tleak must clean up: the temporary file a report is being written to, and
// the child it waits for (memcheck under --valgrind). The engine registers them while they exist;
// the command line's SIGINT/SIGTERM handler removes the file and passes the signal on to the child
// before tleak ends, so an interrupted run leaves no half-written file and no orphan behind.
#pragma once

#include <sys/types.h>

namespace tleak::diagnosis {

// The temporary file being written, or nullptr. Stored in a static buffer: a signal handler reads it.
void set_temporary_file(const char* path);
const char* temporary_file();

// The child process tleak is waiting for, or 0.
void set_waited_child(pid_t pid);
pid_t waited_child();

}  // namespace tleak::diagnosis
