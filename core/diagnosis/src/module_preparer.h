// Reads the symbol tables and debug info of a running program's modules ahead of its report, on a
// thread that runs only when a core would otherwise be idle (SCHED_IDLE): the report at the end
// then resolves its frames without waiting for them. With the C library's separate debug info
// installed, reading it alone took longer than the rest of the report of a numpy loop.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "tleak/symbolizer.h"

namespace tleak::diagnosis {

class ModulePreparer {
 public:
  ModulePreparer();
  // Stops the thread after the module it is reading and waits for it.
  ~ModulePreparer();
  ModulePreparer(const ModulePreparer&) = delete;
  ModulePreparer& operator=(const ModulePreparer&) = delete;

  // The program's module map as it is now (modules already known are skipped).
  void add_modules(const std::vector<ModuleInfo>& modules);
  // Tells the thread to stop after the module it is reading, without waiting for it.
  void stop();
  // Stops the thread, waits for it and hands over its symbolizer with `modules` added; modules it
  // did not get to are read when a frame first needs them.
  std::unique_ptr<Symbolizer> finish(const std::vector<ModuleInfo>& modules);

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<ModuleInfo> pending_;
  bool has_pending_ = false;
  bool stop_ = false;
  std::unique_ptr<Symbolizer> symbolizer_;
  std::thread thread_;
};

}  // namespace tleak::diagnosis
