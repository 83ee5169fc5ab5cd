// Reads a running program's modules' symbol tables and debug info ahead of its report, on a thread
// of tleak's own, so that the report at the program's end does not wait for them: libdw
// decompresses a separate debug file whole, and the C library's (Debian's libc6-dbg) alone takes
// about 50 ms, a seventh of a short numpy loop's run (on the first run of a machine: later runs
// read the uncompressed copy allocators/src/debuginfo_cache.h keeps).
//
// The thread runs at the normal priority: on a machine with a core to spare (a single-threaded
// program) the work is free; on one whose cores are all busy it costs what it would have cost at
// the end, and the report never waits on a thread the scheduler starves (a SCHED_IDLE thread,
// tried before, got almost no time on a busy machine). The reader that feeds it never waits: a new
// map is handed over under a short lock, and the thread takes it between two modules.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "tleak/symbolizer.h"

namespace tleak::diagnosis {

class ModulePreparer {
 public:
  ModulePreparer();
  // Stops the thread after the module it is reading.
  ~ModulePreparer();
  ModulePreparer(const ModulePreparer&) = delete;
  ModulePreparer& operator=(const ModulePreparer&) = delete;

  // The program's whole module map as it is now (as the agent sent it); objects already known are
  // skipped. Never waits for the thread.
  void set_modules(std::vector<ModuleInfo> modules);

  // The symbolizer, for a report made while the program runs (a snapshot): the thread waits
  // meanwhile (it waits for the thread to finish the module it is reading).
  template <class Use>
  void with_symbolizer(Use&& use) {
    std::lock_guard lock(symbolizer_mutex_);
    if (take_pending_map()) wake();  // the thread reads what the map added, later
    use(*symbolizer_);
  }

  // Stops the thread after the module it is reading and hands over the symbolizer with the latest
  // map; what was not read yet is read on first lookup.
  std::unique_ptr<Symbolizer> finish();

 private:
  void run();
  // Adds the map handed over since, if any (true). Call with symbolizer_mutex_ held.
  bool take_pending_map();
  // Tells the thread there may be modules to read.
  void wake();

  std::mutex mutex_;  // guards pending_, work_ and stop_; never held while a module is read
  std::condition_variable wake_;
  std::optional<std::vector<ModuleInfo>> pending_;
  bool work_ = false;
  bool stop_ = false;

  std::mutex symbolizer_mutex_;  // held while the thread reads a module
  std::unique_ptr<Symbolizer> symbolizer_;
  std::thread thread_;
};

}  // namespace tleak::diagnosis
