// The event source for a program run under the LD_PRELOAD agent: decodes the agent's stream
// (tleak/agent/protocol.h), puts each epoch's records back in time order, keeps the live blocks by
// address, and feeds the same Recorder the scenarios feed. Marks come from the program or, until
// its first mark, from the agent's time samples.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "tleak/agent/protocol.h"
#include "tleak/diagnosis/classifier.h"
#include "tleak/diagnosis/live_table.h"
#include "tleak/diagnosis/recorder.h"
#include "tleak/diagnosis/stack_keys.h"
#include "tleak/symbolizer.h"

namespace tleak::diagnosis {

class StreamError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class AgentSource {
 public:
  // `max_sites`: distinct stacks given a site of their own; past them, new stacks come under one
  // site with no frames (stacks_overflowed()).
  explicit AgentSource(std::uint32_t max_sites = agent::kMaxSites);
  // A site's frames are kept against another site's (StackSpan) only when that one is kept against
  // at most this many others: a stack is rebuilt in a bounded number of steps.
  static constexpr std::uint32_t kMaxSpanChain = 16;

  // One message from the agent. Throws StreamError on anything malformed.
  void consume(std::span<const unsigned char> message);

  // Called when a snapshot fence has been processed (the state is as of that moment).
  std::function<void(const std::string& name)> on_snapshot;
  // Called after every processed fence, for the budget guard and progress.
  std::function<void()> on_fence;

  bool hello_seen() const { return hello_seen_; }
  std::uint32_t pid() const { return pid_; }
  // The executable of the process image the recording is about (the last one, if it exec'd).
  const std::string& executable() const { return executable_; }
  // The code that image ran as its own without a file (python3 -c, standard input), if any: the
  // user's, for site labels (tleak/agent/python_files.h).
  agent::PythonMainCode python_main_code() const { return python_main_code_; }
  // The allocation functions the image's executable defines itself, which the agent never saw
  // called (agent::HelloRecord::shadowed's bits).
  std::uint32_t shadowed_functions() const { return shadowed_functions_; }
  // The script or -m module the Python program runs, as its command line named it; empty if none.
  const std::string& python_target() const { return python_target_; }
  // Whether the image ran Python code (the agent described Python frames).
  bool python_seen() const { return !python_frames_.empty(); }
  // Whether that image's interpreter served small objects from pymalloc, unseen by the agent.
  bool python_small_objects_unseen() const { return python_small_objects_unseen_; }
  double sample_seconds() const { return static_cast<double>(sample_ns_) / 1e9; }
  // "iterations" once the program marked, "time" before.
  const char* clock_name() const { return user_marks_ ? "iterations" : "time"; }
  std::int64_t live_bytes() const { return recorder_->live_bytes(); }
  // Bytes allocated in records not yet ordered (an upper bound on how far live bytes may have gone).
  std::int64_t pending_allocated_bytes() const { return pending_allocated_; }
  // How many of the program's threads (by their buffers, modulo 64) allocated since the last call.
  int take_allocating_threads() {
    const int n = __builtin_popcountll(allocating_threads_);
    allocating_threads_ = 0;
    return n;
  }
  // Whether the records waiting for a fence have grown past kFlushRecords (2 MiB of them): the
  // caller then asks the agent for one (agent::RecordKind::kFlush) instead of waiting for the next
  // sample. A busy program's 100 ms epoch is millions of records, whose pages are first touched
  // (and, on a virtual machine, slowly zeroed) and read back from memory when ordered.
  bool wants_flush() const { return pending_.size() >= kFlushRecords; }
  // Whether the distinct stacks filled every site there is (agent::kMaxSites): allocations from
  // stacks first seen after that came under one site without frames.
  bool stacks_overflowed() const { return stacks_overflowed_; }
  // The sites the agent sent with no frames: allocations made with too little of the thread's
  // stack left for the unwinder (the agent's stack_room.h), or where it could walk no frame. Kept
  // as they arrive: a pass over a program's sites asking each (686,000 for PyTorch) took 9 ms of
  // the report's time after the program had exited.
  const std::vector<std::uint32_t>& empty_stack_sites() const { return empty_stack_sites_; }

  // The agent ran its exit handlers and waits for the live list.
  bool exit_requested() const { return exit_requested_; }
  // The thread that asked (its id), which scans: the agent reads that one's registers itself.
  std::uint32_t exiting_thread() const { return exiting_thread_; }
  // The live blocks as (address, size) pairs sorted by address: what the agent scans.
  const std::vector<std::uint64_t>& live_list() const;
  // The agent's exit scan has read the heap (its kScanned record, or its answer): the other
  // threads, held stopped meanwhile, may go on.
  bool scan_done() const { return scan_done_ || reach_started_; }
  // The agent could not make its exit scan (kScanFailed), and why; no answer comes.
  bool scan_failed() const { return scan_failure_ != agent::ScanFailure::kNone; }
  agent::ScanFailure scan_failure() const { return scan_failure_; }
  // The agent's reachability answer arrived, for the list live_list() gave.
  bool reach_complete() const { return reach_complete_; }
  // Part of the answer arrived: more of its bitmap is to come (ReachMoreRecord messages, among
  // which a thread still running as the program exits may send records).
  bool reach_continues() const { return reach_started_ && !reach_complete_; }
  std::uint64_t reach_root_bytes() const { return reach_root_bytes_; }

  // Judges the sites (judge_sites) as they stand once the program asked to exit, for a report of at
  // most `max_findings` sites: its exit scan takes tens of milliseconds, in which tleak has nothing
  // else to do.
  void judge_sites_at_exit(const ClassifierOptions& options, std::size_t max_findings);
  // Ends the recording. With a complete reach answer, unreachable blocks are leaks and the rest
  // reachable at exit; without one, nothing left is judged.
  Recording finish();
  // judge_sites_at_exit()'s judgements, or null; after finish(), only while they are of its
  // recording (else null: records came after them, from a thread still inside the agent as the
  // program exited).
  const SiteJudgements* site_judgements() const { return judgements_.get(); }
  Recording snapshot() const;

  std::vector<std::uintptr_t> stack(SiteId site) const;
  std::vector<ModuleInfo> modules() const;
  // Counts every change of modules(), and every process image (a hello: the start, each exec).
  std::uint64_t module_changes() const { return module_changes_; }
  std::uint64_t images() const { return images_; }
  // Appends to `stack` what a frame word of stack() stands for: a Python frame (resolved by the
  // agent while it ran), or a return address, which `symbolizer` resolves (with the functions
  // inlined there).
  void resolve(std::uintptr_t word, Symbolizer& symbolizer, std::vector<Frame>& stack) const;

 private:
  // A record waiting for its epoch's fence, in arrival order (its index in pending_ breaks ties
  // between equal times). 32 bytes: an epoch of a busy program holds millions.
  struct Pending {
    std::uint64_t ns;
    std::uint64_t address;
    std::uint64_t size;   // allocations only
    std::uint32_t site;
    bool is_free;
  };
  // Time order, a free first at the same instant (an address is released before it is reused);
  // arrival order decides the rest.
  static bool happened_before(const Pending& a, const Pending& b) {
    return a.ns != b.ns ? a.ns < b.ns : a.is_free && !b.is_free;
  }
  // Appends to pending_, noting where a new sorted run of it begins.
  void add_pending(const Pending& p) {
    if (pending_.empty() || happened_before(p, pending_.back())) run_begins_.push_back(pending_.size());
    pending_.push_back(p);
  }
  // A live block: all the recording reads of it (a program's blocks carry no uses, and the report
  // names no block's time). 16 bytes: the table holds a PyTorch program's hundreds of thousands,
  // and two threads' records make an insert and a take each per allocation.
  struct Live {
    std::uint64_t size = 0;
    std::uint32_t site = 0;
    // Allocated after the exit scan's list was made (by a thread still running as the program
    // exited): no bit of the scan's answer is this block's.
    bool after_list = false;
  };

  // What the recording has taken in: the records applied (clock_) and the fences (fences_: each
  // may mark, or clear the marks). The same twice: nothing changed the recording in between.
  struct Applied {
    std::uint64_t records = 0, fences = 0;
    bool operator==(const Applied&) const = default;
  };
  Applied applied() const { return {clock_, fences_}; }

  void record(const unsigned char* at, std::uint32_t size);
  // An AllocRecord and a FreeRecord at `at`, their size checked.
  void alloc_record(const unsigned char* at);
  void free_record(const unsigned char* at);
  void fence(std::uint16_t kind, const unsigned char* at, std::uint32_t size);
  void drain_epoch();
  void apply_free(std::uint64_t address);
  BlockInfo block_info(std::uint64_t address, const Live& live) const;
  std::vector<BlockInfo> live_blocks(bool reachable_wanted, bool all) const;

  void reset();

  std::unique_ptr<Recorder> recorder_;
  bool hello_seen_ = false;
  std::uint32_t pid_ = 0;
  std::string executable_;
  agent::PythonMainCode python_main_code_ = agent::PythonMainCode::kNone;
  std::uint32_t shadowed_functions_ = 0;
  bool python_small_objects_unseen_ = false;
  std::string python_target_;
  std::uint64_t sample_ns_ = 100'000'000;
  bool user_marks_ = false;
  // The Python interpreter began finalizing: time samples stop, so that a site's series ends where
  // the program's own work did, not in the teardown that frees what it kept.
  bool finalizing_ = false;
  std::uint64_t iteration_ = 0;
  std::uint64_t clock_ = 0;
  std::uint64_t fences_ = 0;  // fence records applied
  std::int64_t pending_allocated_ = 0;
  std::uint64_t allocating_threads_ = 0;  // a bit per thread buffer (modulo 64)
  // The site of stacks that came after every site was given (never sent: no frames).
  static constexpr std::uint32_t kUnknownStackSite = 0;
  std::uint32_t max_sites_;
  std::uint32_t next_site_ = 1;
  StackKeys site_keys_;
  // What each thread's stack slots stand for (agent::SiteRecord): slot_sites_[thread *
  // kStackSlots + slot], kNoSite where the thread named none. Grown to the highest thread seen.
  static constexpr std::uint32_t kNoSite = ~std::uint32_t{0};
  std::vector<std::uint32_t> slot_sites_;
  // Each thread's previous site record, which the next is written against: its frames and site.
  struct LastStack {
    std::vector<std::uintptr_t> frames;
    std::uint32_t site = kUnknownStackSite;
  };
  std::vector<LastStack> last_stacks_;  // by thread
  void define_stack(const agent::SiteRecord& s, const unsigned char* middle);
  bool stacks_overflowed_ = false;
  // Whether the last message had site records: the next one's keys are then asked for ahead.
  bool sites_lately_ = true;
  static constexpr std::size_t kPendingReserve = std::size_t{1} << 20;
  static constexpr std::size_t kFlushRecords = std::size_t{1} << 16;  // 2 MiB of Pending
  std::vector<Pending> pending_;
  std::vector<std::size_t> run_begins_;  // of pending_'s maximal sorted runs
  LiveTable<Live> live_;
  // Each site's frames as the agent sent them (agent::SiteRecord): the ones it does not share
  // with its base site (the site of the thread's previous site record), end to end in chunks that
  // never move (a program can send a million sites: one allocation each, or one vector that grows
  // by copying, would cost more than the frames).
  struct StackSpan {
    const std::uintptr_t* middle = nullptr;  // null: no such site was sent
    std::uint32_t base = 0;
    std::uint8_t depth = 0;
    std::uint8_t prefix = 0;
    std::uint8_t suffix = 0;
    std::uint8_t chain = 0;  // sites between this one and a base-less one
  };
  std::uintptr_t frame_at(const StackSpan& span, std::size_t k) const;
  static constexpr std::size_t kFrameChunkWords = std::size_t{1} << 17;
  std::vector<StackSpan> site_spans_;  // by site id
  std::vector<std::uint32_t> empty_stack_sites_;
  std::vector<std::unique_ptr<std::uintptr_t[]>> frame_chunks_;
  std::size_t chunk_used_ = 0;  // words used in the last chunk
  std::unordered_map<std::uint32_t, Frame> python_frames_;
  // One Python frame to the user is one frame here: two instructions of one expression (CPython
  // 3.11's PRECALL and CALL: a call runs from the first once the instruction is specialized, from
  // the second before) came as two ids, and split the sites of one line. python_same_[id] is the
  // first id of the same file, function, line and columns (the id itself where it is the first);
  // ids past kMaxSites are the agent's impossible ones and stay as they are.
  std::vector<std::uint32_t> python_same_;
  std::unordered_map<std::string, std::uint32_t> python_by_place_;
  bool python_ids_merged_ = false;  // some id stands for an earlier one
  // `frames` with each Python frame id made the first of its place; false if none changed.
  bool merge_python_ids(const std::uintptr_t* frames, std::uint32_t depth, std::uintptr_t* merged) const;
  std::vector<ModuleInfo> modules_;
  std::uint64_t module_changes_ = 0;
  std::uint64_t images_ = 0;
  bool exit_requested_ = false;
  std::uint32_t exiting_thread_ = 0;
  // The reach answer: the list the agent was sent, and the bitmap as it arrives.
  mutable std::vector<std::uint64_t> sent_list_;
  // Each listed block's site, in the list's order, and the recording it is of: finish() splits the
  // blocks by the answer without looking each one up again (47,000 lookups in a table sized for the
  // run's peak: 1 ms of a PyTorch loop's end, after the answer) while nothing changed since.
  mutable std::vector<std::uint32_t> sent_sites_;
  mutable Applied listed_at_;
  mutable bool list_sent_ = false;
  std::vector<unsigned char> reach_bytes_;
  std::uint64_t reach_expected_ = 0;
  bool scan_done_ = false, reach_started_ = false, reach_complete_ = false;
  agent::ScanFailure scan_failure_ = agent::ScanFailure::kNone;
  std::uint64_t reach_root_bytes_ = 0;
  std::unique_ptr<SiteJudgements> judgements_;
  Applied judged_at_;  // the recording they are of
};

}  // namespace tleak::diagnosis
