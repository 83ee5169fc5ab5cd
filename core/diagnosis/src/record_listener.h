// Under `tleak run --record NAME`, where the process that runs NAME connects when it did not
// inherit tleak's socket (its parent closed the descriptors it would have passed on: Python's
// subprocess does, and so do launchers built on it): a listening socket in the abstract namespace
// (no file to leave behind), its name random, and a connection taken only from the process that
// claimed the recording in the control page.
#pragma once

#include <sys/types.h>

#include <string>

#include "unique_fd.h"

namespace tleak::diagnosis {

class RecordListener {
 public:
  // Listens; throws ProgramError if it cannot.
  RecordListener();
  int fd() const { return socket_.get(); }
  // The name to connect to (agent::kEnvStreamName), its leading NUL left out.
  const std::string& name() const { return name_; }
  // The connection waiting, if process `pid` made it; else an empty Fd (a connection from any other
  // process is closed: whoever found the name has no stream to send). If tleak cannot take one (no
  // descriptor left for it, no memory), the listener closes: the connections waiting end, and their
  // processes, which would have waited for tleak on a full socket, run on unrecorded; fd() is -1
  // from then on and failure() says why.
  Fd accept_from(pid_t pid);
  // "accept: Too many open files", or empty.
  const std::string& failure() const { return failure_; }

 private:
  Fd socket_;
  std::string name_;
  std::string failure_;
};

}  // namespace tleak::diagnosis
