#include "module_preparer.h"

#include <sched.h>

namespace tleak::diagnosis {

ModulePreparer::ModulePreparer()
    : symbolizer_(std::make_unique<Symbolizer>(std::vector<ModuleInfo>{})), thread_([this] { run(); }) {}

ModulePreparer::~ModulePreparer() {
  stop();
  if (thread_.joinable()) thread_.join();
}

void ModulePreparer::add_modules(const std::vector<ModuleInfo>& modules) {
  {
    std::lock_guard lock(mutex_);
    pending_ = modules;
    has_pending_ = true;
  }
  wake_.notify_one();
}

void ModulePreparer::stop() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
}

std::unique_ptr<Symbolizer> ModulePreparer::finish(const std::vector<ModuleInfo>& modules) {
  stop();
  if (thread_.joinable()) thread_.join();
  symbolizer_->add_modules(modules);
  return std::move(symbolizer_);
}

void ModulePreparer::run() {
  // Only a core the program and tleak's reading leave idle: never slower for either. (Lowering
  // one's own policy needs no privilege; if it fails, the work is the same as at the end.)
  sched_param param{};
  sched_setscheduler(0, SCHED_IDLE, &param);
  for (;;) {
    std::vector<ModuleInfo> modules;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stop_ || has_pending_; });
      if (stop_) return;
      modules.swap(pending_);
      has_pending_ = false;
    }
    symbolizer_->add_modules(modules);
    for (;;) {
      {
        std::lock_guard lock(mutex_);
        if (stop_ || has_pending_) break;
      }
      if (!symbolizer_->prepare_next_module()) break;
    }
  }
}

}  // namespace tleak::diagnosis
