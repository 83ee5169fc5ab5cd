// What a workload sees while tleak runs it: the allocators every byte must come from, the op clock
// and use reports the runtime feeds the tracker, and the iteration marks that end each loop turn.
// Scenarios and user workloads are functions of a WorkloadContext.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tleak/allocator.h"
#include "tleak/tracking_allocator.h"

namespace tleak::diagnosis {

struct WorkloadParams {
  std::string variant = "leaky";
  std::string mode = "eager";
  std::uint64_t iterations = 20;
  double scale = 1.0;
  bool under_valgrind = false;
};

class WorkloadContext {
 public:
  struct Parts {
    Allocator* host;
    Allocator* device;
    Allocator* system;
    TrackingAllocator* host_tracker;    // null when untracked
    TrackingAllocator* device_tracker;  // null when untracked
    TrackingAllocator* system_tracker;  // null when untracked
    LogicalClock* clock;                // null when untracked
    std::function<void()> on_mark;      // samples the recorder; called after the clock advances
  };
  WorkloadContext(WorkloadParams params, Parts parts) : params_(std::move(params)), parts_(std::move(parts)) {}

  const WorkloadParams& params() const { return params_; }
  Allocator& host() { return *parts_.host; }
  Allocator& device() { return *parts_.device; }
  Allocator& system() { return *parts_.system; }

  // One op is about to run.
  void tick() {
    if (parts_.clock != nullptr) parts_.clock->tick();
  }
  // The current op read or wrote the block at `ptr`, which came from `owner`.
  void use(const Allocator& owner, const void* ptr) {
    if (TrackingAllocator* tracker = tracker_of(owner)) tracker->use(ptr);
  }
  // One iteration of the workload's loop is over.
  void mark_iteration() {
    if (parts_.clock != nullptr) parts_.clock->advance_iteration();
    if (parts_.on_mark) parts_.on_mark();
  }
  // A fact the workload measured about itself that is not memory (e.g. "outputs stayed at 2.0
  // while the counter rose to 20"): reported verbatim in the report's notes.
  void note(std::string text) { notes_.push_back(std::move(text)); }
  const std::vector<std::string>& notes() const { return notes_; }

  // Runs after the workload returns, last registered first: the runtime's caches, graphs and
  // sessions are destroyed here, so what survives is a true leak.
  void at_teardown(std::function<void()> step) { teardown_.push_back(std::move(step)); }
  void run_teardown() {
    while (!teardown_.empty()) {
      auto step = std::move(teardown_.back());
      teardown_.pop_back();
      step();
    }
  }

 private:
  TrackingAllocator* tracker_of(const Allocator& owner) {
    if (&owner == parts_.host) return parts_.host_tracker;
    if (&owner == parts_.device) return parts_.device_tracker;
    if (&owner == parts_.system) return parts_.system_tracker;
    return nullptr;
  }

  WorkloadParams params_;
  Parts parts_;
  std::vector<std::function<void()>> teardown_;
  std::vector<std::string> notes_;
};

using Workload = std::function<void(WorkloadContext&)>;

}  // namespace tleak::diagnosis
