// What an interrupted tleak must clean up: the files that exist only while it works (the temporary
// file a report is being written to; under --valgrind, the child's report, memcheck's log and the
// log's private directory) and the child it waits for (memcheck). The engine registers them while
// they exist; the command line's SIGINT/SIGTERM handler passes the signal on to the child and
// removes the files before tleak ends, so an interrupted run leaves no half-written file, no
// temporary file and no orphan behind.
#pragma once

#include <sys/types.h>

#include <string>

namespace tleak::diagnosis {

// The child process tleak is waiting for, or 0.
void set_waited_child(pid_t pid);
pid_t waited_child();

// A file (or an empty directory) an interruption removes while this object lives. Stored in a
// static table a signal handler reads: at most kMaxRemovedOnInterrupt at once (past that, or for a
// path longer than the table holds, it is not registered).
class RemovedOnInterrupt {
 public:
  static constexpr int kMaxRemovedOnInterrupt = 8;
  enum class Kind { kFile, kDirectory };
  RemovedOnInterrupt(const std::string& path, Kind kind);
  ~RemovedOnInterrupt();
  RemovedOnInterrupt(const RemovedOnInterrupt&) = delete;
  RemovedOnInterrupt& operator=(const RemovedOnInterrupt&) = delete;

 private:
  int slot_;
};

// The signal handler's part (async-signal-safe): removes what is registered, files first.
void remove_registered_files();

}  // namespace tleak::diagnosis
