#include "tleak/diagnosis/session.h"

#include <unistd.h>

#include <chrono>
#include <ctime>
#include <optional>

#include "tleak/detail/valgrind_annotations.h"
#include "tleak/device_allocator.h"
#include "tleak/diagnosis/recorder.h"
#include "tleak/diagnosis/report_builder.h"
#include "tleak/diagnosis/run_stamp.h"
#include "tleak/pool_allocator.h"
#include "tleak/symbolizer.h"
#include "tleak/system_allocator.h"
#include "tleak/tracking_allocator.h"

namespace tleak::diagnosis {
namespace {

// The three allocators of a run, optionally behind trackers.
struct Allocators {
  PoolAllocator pool;
  DeviceAllocator device;
  SystemAllocator system;
  std::optional<TrackingContext> context;
  std::optional<TrackingAllocator> pool_tracker, device_tracker, system_tracker;

  explicit Allocators(const SessionOptions& o)
      : pool(PoolOptions{.name = "host-pool", .chunk_size = std::size_t{2} << 20,
                         .valgrind_annotations = o.valgrind_annotations}),
        device(DeviceOptions{.name = "device", .capacity = o.device_capacity, .allow_growth = o.device_allow_growth}) {
    if (!o.track) return;
    context.emplace(TrackingOptions{.stack_depth = o.stack_depth});
    pool_tracker.emplace(pool, *context);
    device_tracker.emplace(device, *context);
    system_tracker.emplace(system, *context);
  }
  std::vector<AllocatorInfo> infos() const {
    std::vector<AllocatorInfo> out;
    for (const Allocator* a : std::initializer_list<const Allocator*>{&pool, &device, &system}) {
      out.push_back({std::string(a->name()), a->space()});
    }
    return out;
  }
  std::vector<AllocatorStats> stats() const { return {pool.stats(), device.stats(), system.stats()}; }
  std::vector<BlockInfo> still_live() const {
    std::vector<BlockInfo> live;
    for (const auto* t : {&*pool_tracker, &*device_tracker, &*system_tracker}) {
      const auto blocks = t->live_blocks();
      live.insert(live.end(), blocks.begin(), blocks.end());
    }
    return live;
  }
};

// Runs the workload on fresh allocators (tracked unless asked not to) and fills the report's
// findings. Everything it allocated for itself is gone when it returns.
void run_instrumented(const Workload& workload, const SessionOptions& options, Report& report) {
  Allocators allocators(options);
  std::optional<Recorder> recorder;
  if (options.track) {
    recorder.emplace(allocators.context->allocators());
    allocators.context->set_sink(&*recorder);
  }
  std::uint64_t marks = 0;
  const auto on_mark = [&] {
    ++marks;
    if (recorder) {
      const LogicalClock& clock = allocators.context->clock();
      recorder->mark(clock.iteration(), clock.now(), allocators.stats());
    }
    if (options.progress) options.progress(marks, options.params.iterations);
  };
  WorkloadContext::Parts parts{&allocators.pool, &allocators.device, &allocators.system,
                               nullptr, nullptr, nullptr, nullptr, on_mark};
  if (options.track) {
    // Every byte goes through the trackers; the untracked baseline uses the raw allocators.
    TrackingAllocator* trackers[] = {&*allocators.pool_tracker, &*allocators.device_tracker,
                                     &*allocators.system_tracker};
    parts = {trackers[0], trackers[1], trackers[2], trackers[0], trackers[1], trackers[2],
             &allocators.context->clock(), on_mark};
  }
  WorkloadContext context(options.params, parts);
  workload(context);
  context.run_teardown();
  report.notes = context.notes();

  if (options.track) {
    allocators.context->set_sink(nullptr);
    const Recording rec =
        recorder->finish(allocators.context->now(), allocators.stats(), allocators.still_live());
    Symbolizer symbolizer;
    const TrackingContext& tracking = *allocators.context;
    fill_report(report, rec, options.thresholds, allocators.stats(),
                [&tracking](SiteId site) { return tracking.stack(site); },
                [&symbolizer](std::uintptr_t address, std::vector<Frame>& stack) { symbolizer.append_frames(address, stack); });
  } else {
    fill_untracked_totals(report, allocators.infos(), allocators.stats());
    report.summary.sentence = "untracked run: no per-site figures (run without --no-track for a diagnosis)";
  }
}

}  // namespace

Report run_workload(const Workload& workload, const SessionOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  Report report;
  report.thresholds = options.thresholds;
  RunInfo& run = report.run;
  run.scenario = options.scenario;
  run.variant = options.params.variant;
  run.mode = options.params.mode;
  run.iterations = options.params.iterations;
  run.scale = options.params.scale;
  run.stack_depth = options.stack_depth;
  run.tleak_version = TLEAK_VERSION;
  run.started_at = utc_now();
  run.host = host_name();
  run.under_valgrind = valgrind::running_on_valgrind();
  run.tracked = options.track;
  run.valgrind_annotations = options.valgrind_annotations;

  // The allocators and trackers die with this call: nothing of tleak's points at a leaked block after.
  run_instrumented(workload, options, report);
  if (run.under_valgrind) {
    // Ask memcheck now, while the program still holds heap blocks (it skips the search otherwise).
    const valgrind::LeakCounts counts = valgrind::leak_check();
    MemcheckFigures m;
    m.lost_bytes = static_cast<std::int64_t>(counts.lost_bytes);
    m.lost_blocks = static_cast<std::int64_t>(counts.lost_blocks);
    m.possibly_lost_bytes = static_cast<std::int64_t>(counts.possibly_lost_bytes);
    m.still_reachable_bytes = static_cast<std::int64_t>(counts.still_reachable_bytes);
    m.suppressed_bytes = static_cast<std::int64_t>(counts.suppressed_bytes);
    for (const AllocatorTotals& a : report.totals.allocators) {
      (a.space == "device" ? m.tleak_device_leaked_bytes : m.tleak_host_leaked_bytes) += a.leaked_bytes;
    }
    judge_agreement(m, options.valgrind_annotations);
    report.memcheck = m;
  }
  report.notes.insert(report.notes.begin(), options.notes.begin(), options.notes.end());
  run.duration_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return report;
}

}  // namespace tleak::diagnosis
