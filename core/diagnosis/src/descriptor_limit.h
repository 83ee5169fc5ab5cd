// tleak's limit on open descriptors, raised for the run and given back to the program. The
// symbolizer holds a module's files open while it reads them ahead (300 for a PyTorch program), so
// under a low soft limit (`ulimit -n 64`) frames went unresolved without a word; the program must
// still see the limit it was given (a program's select() or its own descriptor count depend on it).
#pragma once

#include <sys/resource.h>

namespace tleak::diagnosis {

class DescriptorLimit {
 public:
  // Raises the soft limit to the hard one, if it can.
  DescriptorLimit() {
    if (getrlimit(RLIMIT_NOFILE, &given_) != 0 || given_.rlim_cur >= given_.rlim_max) return;
    rlimit raised = given_;
    raised.rlim_cur = raised.rlim_max;
    raised_ = setrlimit(RLIMIT_NOFILE, &raised) == 0;
  }
  ~DescriptorLimit() {
    if (raised_) setrlimit(RLIMIT_NOFILE, &given_);
  }
  DescriptorLimit(const DescriptorLimit&) = delete;
  DescriptorLimit& operator=(const DescriptorLimit&) = delete;

  // In the program's process, between fork and exec (a system call only: async-signal-safe).
  void give_back() const {
    if (raised_) setrlimit(RLIMIT_NOFILE, &given_);
  }

 private:
  rlimit given_{};
  bool raised_ = false;
};

}  // namespace tleak::diagnosis
