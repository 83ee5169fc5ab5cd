// The report of one run, schema "tleak.report/1": what ran, totals, the verdict, the timeline and
// every site with its frames and figures. The same document is the snapshot `tleak diff` reads.
// schema/tleak.report.schema.json describes the JSON; report_json.cc writes and reads it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tleak/diagnosis/classifier.h"
#include "tleak/diagnosis/function_name.h"
#include "tleak/symbolizer.h"

namespace tleak::diagnosis {

inline constexpr const char* kReportSchema = "tleak.report/1";
inline constexpr int kReportSchemaVersion = 1;

// What `tleak run -- COMMAND` ran and how it ended.
struct ProgramInfo {
  std::vector<std::string> command;
  std::int64_t pid = 0;  // of the process recorded
  // tleak run --record NAME: the process recorded was the first of the command's to run NAME;
  // null: the command's own.
  std::optional<std::string> record;
  // tleak run --record-fork: the process recorded was a copy the command's process forked, from
  // its first allocation on.
  bool forked_copy = false;
  std::optional<int> exit_status;  // when it exited
  std::optional<int> exit_signal;  // when a signal ended it
  std::string stopped_by;          // "max-live" when tleak stopped it; else empty
  std::string clock = "time";      // "iterations" (the program's marks) or "time" (samples)
  double sample_seconds = 0.1;     // the time clock's period
  bool exit_scan = false;          // blocks left at exit were scanned for reachability
  std::int64_t exit_scan_root_bytes = 0;
  std::optional<std::string> snapshot;  // set in a snapshot's report: its name
  // Whose Python code the labels took for the user's (PythonUsersCode): tleak run --focus, and the
  // program's own code without a file ("<string>" of python3 -c, "<stdin>"); null: none.
  std::optional<std::string> focus;
  std::optional<std::string> python_main_code;
};

struct RunInfo {
  std::string scenario;
  std::string variant;
  std::string mode;
  std::uint64_t iterations = 0;
  double scale = 1.0;
  int stack_depth = 12;
  std::string tleak_version;
  std::string started_at;  // UTC, ISO 8601
  double duration_seconds = 0;
  std::string host;
  bool under_valgrind = false;
  bool tracked = true;
  bool valgrind_annotations = true;
  std::optional<ProgramInfo> program;  // null for a scenario
};

struct AllocatorTotals {
  std::string name;
  std::string space;  // "host" or "device"
  std::int64_t peak_live_bytes = 0;      // as requested, from the tracker
  std::int64_t peak_in_use_bytes = 0;    // as the allocator rounded them
  // Null where the allocator's own reserve is not seen (a program's malloc).
  std::optional<std::int64_t> peak_reserved_bytes = 0;
  std::optional<std::int64_t> peak_unused_reserved_bytes = 0;  // reserved but not allocated, at iteration marks
  std::int64_t final_live_bytes = 0;            // at the last iteration mark
  std::int64_t leaked_bytes = 0;
  std::int64_t leaked_blocks = 0;
  std::uint64_t allocate_calls = 0;
  std::uint64_t deallocate_calls = 0;
};

struct Totals {
  std::int64_t peak_live_bytes = 0;
  // The host allocators' reserve at its peak; null when one of them does not show its own (a
  // program's malloc).
  std::optional<std::int64_t> peak_reserved_bytes = 0;
  std::int64_t final_live_bytes = 0;
  std::int64_t leaked_bytes = 0;
  std::int64_t leaked_blocks = 0;
  // A program's blocks still allocated at exit that are not leaks: reachable from its roots, or
  // unjudged when it ended without an exit scan (killed, _exit).
  std::int64_t reachable_at_exit_bytes = 0;
  std::int64_t reachable_at_exit_blocks = 0;
  std::int64_t unjudged_at_exit_bytes = 0;
  std::int64_t unjudged_at_exit_blocks = 0;
  std::uint64_t allocations = 0;
  std::uint64_t frees = 0;
  std::vector<AllocatorTotals> allocators;
};

struct Summary {
  std::string verdict = "bounded";  // the worst verdict of any site
  std::string sentence;             // the worst finding, for a person
  std::uint64_t leak_sites = 0, growth_sites = 0, retained_sites = 0, bounded_sites = 0;
};

// One iteration mark's figures, as the recorder took them.
using TimelineSample = MarkSample;

struct Timeline {
  std::uint64_t stride = 1;  // one sample every `stride` iterations
  std::vector<TimelineSample> samples;
  TimelineSample after_teardown;
};

struct SiteReport {
  std::uint32_t id = 0;
  std::string verdict;
  std::string reason;
  std::string label;  // "function (file:line)" of the frame that names the site
  std::string allocator;
  std::vector<Frame> frames;
  std::uint64_t allocations = 0, frees = 0;
  std::int64_t bytes_allocated = 0;
  std::int64_t peak_live_bytes = 0;
  std::int64_t final_live_bytes = 0;
  std::int64_t leaked_bytes = 0;
  std::int64_t leaked_blocks = 0;
  std::int64_t reachable_at_exit_bytes = 0;  // as in Totals
  std::int64_t reachable_at_exit_blocks = 0;
  std::int64_t unjudged_at_exit_bytes = 0;
  std::int64_t unjudged_at_exit_blocks = 0;
  GrowthFigures growth;
  RetainedFigures retained;
  std::vector<std::int64_t> live_bytes_at_samples;  // aligned with timeline.samples
};

// What Valgrind's memcheck itself found, beside tleak's figures (only when run under memcheck).
struct MemcheckFigures {
  // From a leak search tleak requested through client requests at the end of the run; memcheck
  // reports definitely and indirectly lost together there.
  std::int64_t lost_bytes = 0, lost_blocks = 0;
  std::int64_t possibly_lost_bytes = 0, still_reachable_bytes = 0, suppressed_bytes = 0;
  // From memcheck's own printed summary, when `tleak run --valgrind` ran it (else -1).
  std::int64_t definitely_lost_bytes = -1, indirectly_lost_bytes = -1;
  std::int64_t errors = -1;
  std::int64_t tleak_host_leaked_bytes = 0;  // what memcheck can see of tleak's leaks
  std::int64_t tleak_device_leaked_bytes = 0;  // what it cannot
  bool agrees = false;
  std::string agreement;  // one sentence
};

// Past this many listed sites a report is large: written on one line, and a site whose live bytes
// were the same at every sample leaves live_bytes_at_samples empty (schema says so).
inline constexpr std::size_t kLargeReportSites = 1000;

struct Report {
  std::string schema = kReportSchema;
  RunInfo run;
  Totals totals;
  Summary summary;
  ClassifierOptions thresholds;
  GrowthFigures total_growth;
  RetainedFigures total_retained;
  Timeline timeline;
  std::vector<SiteReport> sites;
  OmittedSites omitted_sites;
  std::vector<std::string> notes;  // facts the workload measured about itself
  std::optional<MemcheckFigures> memcheck;
};

// Fills `agrees` and `agreement` from the figures (and whether the pool was annotated).
void judge_agreement(MemcheckFigures& m, bool pool_annotated);

// Whose Python code is the user's (tleak/agent/python_files.h): the files under `focus` (empty:
// every file not installed), and the program's own code without a file (`main_code`).
struct PythonUsersCode {
  std::string_view focus = {};
  std::string_view main_code = {};
};
// As a program's report records it (ProgramInfo); none for a scenario's.
PythonUsersCode python_users_code(const RunInfo& run);

// "constant in build_step (graph.cc:42)": the runtime call (if any) and the function that made it,
// without parameters and namespaces, and where.
// With Python frames, "train.py:14 in train_step": the innermost Python frame of the user's code
// (`mine`: by default not the standard library nor an installed package).
std::string site_label(const std::vector<Frame>& frames, PythonUsersCode mine = {});
// The last component of a path: how reports name a source file or a program.
std::string_view file_name(std::string_view path);
// Frames that are allocation plumbing (the C and C++ runtimes' allocating functions, std::,
// tleak's allocators and agent, library code inlined from the system's headers), not the code
// that asked for memory.
bool is_allocation_plumbing(const Frame& frame);
// Index of the frame the label names: the first outside allocation plumbing and tleak's runtime.
std::size_t user_frame_index(const std::vector<Frame>& frames, PythonUsersCode mine = {});
// Whether a symbol names the frame's function (none does in a stripped module, "??", nor in one the
// symbolizer could not read, "?? (why)").
bool frame_has_name(const Frame& frame);
// Why the symbolizer could not read the frame's module, as its function says ("libfoo.so changed
// since the run" of "?? (libfoo.so changed since the run)"); empty for any other frame.
std::string_view unread_module_reason(const Frame& frame);
// How a frame is named in labels and text: its short function, or where no symbol names it (a
// stripped program), its place in its module, "cat+0x4a2f", which addr2line or a debugger turns
// into a line given the module's debug info.
std::string frame_short_name(const Frame& frame);
// Whether a program's blocks left at its end went unjudged: it had no exit scan (killed, _exit, or
// a scan that could not be made), so no leak was looked for, let alone found.
bool leaks_unjudged(const Report& report);
// Why a gate on leaks does not pass such a run, as run --fail-on and check say it.
inline constexpr const char* kLeaksNotJudged = "leaks were not judged (no exit scan; the report's notes say why)";
// The worst finding in one sentence, e.g.
// "growth: +4.0 KiB per iteration at append_result (basic_loops.cc:40)".
std::string summary_sentence(const SiteReport& site, const Report& report);

}  // namespace tleak::diagnosis
