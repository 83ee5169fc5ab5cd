#include "module_preparer.h"

#include <utility>

namespace tleak::diagnosis {

ModulePreparer::ModulePreparer()
    : symbolizer_(std::make_unique<Symbolizer>(std::vector<ModuleInfo>{})), thread_([this] { run(); }) {}

ModulePreparer::~ModulePreparer() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void ModulePreparer::set_modules(std::vector<ModuleInfo> modules) {
  {
    std::lock_guard lock(mutex_);
    pending_ = std::move(modules);
    work_ = true;
  }
  wake_.notify_one();
}

void ModulePreparer::wake() {
  {
    std::lock_guard lock(mutex_);
    work_ = true;
  }
  wake_.notify_one();
}

bool ModulePreparer::take_pending_map() {
  std::optional<std::vector<ModuleInfo>> map;
  {
    std::lock_guard lock(mutex_);
    map.swap(pending_);
  }
  if (map) symbolizer_->add_modules(*map);
  return map.has_value();
}

void ModulePreparer::run() {
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stop_ || work_; });
      if (stop_) return;
      work_ = false;
    }
    // One module at a time, until none is left: a report that needs the symbolizer, or a stop,
    // waits for one module at most.
    for (bool more = true; more;) {
      {
        std::lock_guard lock(mutex_);
        if (stop_) return;
      }
      std::lock_guard lock(symbolizer_mutex_);
      take_pending_map();
      more = symbolizer_->prepare_next_module();
    }
  }
}

std::unique_ptr<Symbolizer> ModulePreparer::finish() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
  take_pending_map();
  return std::move(symbolizer_);
}

}  // namespace tleak::diagnosis
