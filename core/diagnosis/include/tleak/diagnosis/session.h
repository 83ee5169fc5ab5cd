// Runs one workload under the instrumented allocators and returns its report: sets up the host
// pool, the device arena and the system heap (each behind a tracker sharing one clock and stack
// table), runs the workload with iteration marks, tears it down, finds what is still live, and
// classifies every site.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tleak/diagnosis/classifier.h"
#include "tleak/diagnosis/report.h"
#include "tleak/diagnosis/workload.h"

namespace tleak::diagnosis {

struct SessionOptions {
  std::string scenario;
  WorkloadParams params;
  int stack_depth = 12;
  bool track = true;                  // false: raw allocators, no sites (the baseline for cost)
  bool valgrind_annotations = true;   // pool client requests
  std::size_t device_capacity = std::size_t{1} << 30;
  bool device_allow_growth = false;  // DeviceOptions::allow_growth
  ClassifierOptions thresholds;
  std::vector<std::string> notes;  // put first in the report's notes (e.g. sizes reduced under Valgrind)
  // Called after every iteration mark with (iterations done, iterations planned).
  std::function<void(std::uint64_t, std::uint64_t)> progress;
};

Report run_workload(const Workload& workload, const SessionOptions& options);

}  // namespace tleak::diagnosis
