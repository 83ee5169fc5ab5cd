// What an interrupted tleak must clean up: the temporary file a report is being written to, the
// child it waits for (memcheck under --valgrind) and that child's files. The engine registers them while they exist;
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

// Other files and directories that exist only while tleak waits for its child (a run under
// memcheck: the child's report, memcheck's log and the log's private directory). An interruption
// removes them, files first. Returns a handle for forget_on_interrupt, or -1 when kMaxLeftovers
// are registered already or the path is too long (then it is not removed).
inline constexpr int kMaxLeftovers = 4;
int remove_on_interrupt(const char* path, bool directory);
void forget_on_interrupt(int handle);
// The signal handler's part (async-signal-safe): removes what is registered.
void remove_leftovers();

}  // namespace tleak::diagnosis
