#include "tleak/diagnosis/agent_source.h"

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>

#include "lane_merge.h"
#include "tleak/agent/protocol.h"
#include "tleak/agent/stack_hash.h"
#include "tleak/diagnosis/counted.h"

namespace tleak::diagnosis {
namespace {

using agent::RecordHeader;
using agent::RecordKind;

// 2^56 bytes: past every 64-bit processor's virtual address space (x86-64's is 2^57 at most with
// five-level paging, of which a process gets half), yet far from overflowing a signed 64-bit sum.
constexpr std::uint64_t kMaxAddressSpace = std::uint64_t{1} << 56;

// How far ahead of the record being decoded a message's lines are asked for.
constexpr std::size_t kReadAhead = 1024;
// How far ahead site records' keys are (a few site records of a stack new to the thread).
constexpr std::size_t kKeysAhead = 768;

template <class T>
T read_as(const unsigned char* at) {
  T value;
  std::memcpy(&value, at, sizeof value);
  return value;
}

std::string string_at(const unsigned char* at, std::uint32_t bytes) {
  if (bytes == 0) return {};
  const auto* text = reinterpret_cast<const char*>(at);
  return std::string(text, strnlen(text, bytes));
}

}  // namespace

AgentSource::AgentSource(std::uint32_t max_sites) : max_sites_(max_sites) { reset(); }

void AgentSource::reset() {
  // No uses are reported from a program: nothing is dead before its free.
  RecorderLimits limits;
  limits.uses_reported = false;
  limits.one_thread = true;
  recorder_ = std::make_unique<Recorder>(std::vector<AllocatorInfo>{{"malloc", MemorySpace::kHost}}, limits);
  exiting_thread_ = 0;
  scan_failure_ = agent::ScanFailure::kNone;
  hello_seen_ = user_marks_ = finalizing_ = exit_requested_ = scan_done_ = reach_started_ = reach_complete_ = stacks_overflowed_ = false;
  judgements_.reset();
  sites_lately_ = true;
  iteration_ = clock_ = fences_ = 0;
  pending_allocated_ = 0;
  pending_.clear();
  run_begins_.clear();
  // Room for a busy epoch asked for once: the flush asked for at kFlushRecords, plus what the
  // socket holds while the request is on its way (8 MiB of records of 24 bytes and more), without
  // growing by doubling, which copies the records into fresh pages. Only the pages an epoch fills
  // are ever touched.
  pending_.reserve(kPendingReserve);
  live_.clear();
  next_site_ = 1;
  site_keys_.clear();
  slot_sites_.clear();
  last_stacks_.clear();
  site_spans_.clear();
  empty_stack_sites_.clear();
  frame_chunks_.clear();
  chunk_used_ = 0;
  python_frames_.clear();
  python_same_.clear();
  python_by_place_.clear();
  python_ids_merged_ = false;
  modules_.clear();
  sent_list_.clear();
  sent_sites_.clear();
  listed_at_ = judged_at_ = {};
  list_sent_ = false;
  reach_bytes_.clear();
}

void AgentSource::consume(std::span<const unsigned char> message) {
  // The answer is the last word: the agent records nothing after it, and what a thread still inside
  // the agent then sends is no part of the heap the scan judged (a block it frees, judged by its
  // bit, would be left unjudged).
  if (reach_complete_) return;
  // The answer goes on in pieces, each naming its place. Any other message meanwhile is a thread's
  // that still ran as the program exited: its records are taken as those that came before the
  // answer are (they once went into the bitmap as if they were part of it).
  if (reach_started_ && message.size() >= sizeof(agent::ReachMoreRecord) &&
      read_as<RecordHeader>(message.data()).kind == RecordKind::kReachMore) {
    const auto more = read_as<agent::ReachMoreRecord>(message.data());
    if (more.header.size != message.size()) throw StreamError("reachability piece of another size than its message");
    if (more.offset != reach_bytes_.size()) throw StreamError("reachability piece out of order");
    reach_bytes_.insert(reach_bytes_.end(), message.begin() + sizeof(agent::ReachMoreRecord), message.end());
    if (reach_bytes_.size() > reach_expected_) throw StreamError("reachability answer longer than announced");
    reach_complete_ = reach_bytes_.size() == reach_expected_;
    return;
  }
  std::size_t at = 0;
  std::size_t asked = 0;  // lines up to here asked for
  // Records up to here whose stack key's slot was asked for; none are while the program sends no
  // site records (a program past its start: reading every header twice cost a twentieth of the
  // reader's time on malloc-heavy's stream).
  std::size_t keys_asked = sites_lately_ ? 0 : message.size();
  std::size_t sites = 0;
  while (at < message.size()) {
    // A message slot was written on the program's core, and each of its lines is fetched from
    // there: asked for a few lines ahead, not one record at a time.
    for (; asked < message.size() && asked < at + kReadAhead; asked += 64) __builtin_prefetch(message.data() + asked);
    // The slots of the site records' keys a few records ahead, likewise: a stack new to the
    // program (most site records) finds its slot in a table of tens of megabytes, and looked up one
    // at a time each waited for memory (two thirds of a site record's time, importing PyTorch).
    // Only the headers are read here; the loop below checks them.
    while (keys_asked < message.size() && keys_asked < at + kKeysAhead &&
           message.size() - keys_asked >= sizeof(agent::SiteRecord)) {
      const auto ahead = read_as<RecordHeader>(message.data() + keys_asked);
      if (ahead.size < sizeof(RecordHeader) || ahead.size % 8 != 0 || ahead.kind == RecordKind::kReach ||
          ahead.kind == RecordKind::kReachMore) {
        keys_asked = message.size();
        break;
      }
      if (ahead.kind == RecordKind::kSite) {
        site_keys_.prefetch(read_as<std::uint64_t>(message.data() + keys_asked + offsetof(agent::SiteRecord, key_a)));
      }
      keys_asked += ahead.size;
    }
    if (message.size() - at < sizeof(RecordHeader)) throw StreamError("truncated record header");
    const auto header = read_as<RecordHeader>(message.data() + at);
    // The two records of nearly every message, each decoded here and not through record().
    if (header.kind == RecordKind::kAlloc && header.size == sizeof(agent::AllocRecord) &&
        message.size() - at >= sizeof(agent::AllocRecord)) {
      alloc_record(message.data() + at);
      at += sizeof(agent::AllocRecord);
      continue;
    }
    if (header.kind == RecordKind::kFree && header.size == sizeof(agent::FreeRecord) &&
        message.size() - at >= sizeof(agent::FreeRecord)) {
      free_record(message.data() + at);
      at += sizeof(agent::FreeRecord);
      continue;
    }
    if (header.kind == RecordKind::kReach) {
      // May continue over the following messages.
      if (message.size() - at < sizeof(agent::ReachRecord)) throw StreamError("truncated reachability record");
      const auto reach = read_as<agent::ReachRecord>(message.data() + at);
      // An answer comes only to the live list tleak sent (the fuzzer's answer to no list, read as
      // one to an empty list, judged blocks by bits that were never sent).
      if (!list_sent_) throw StreamError("reachability answer before tleak sent its live list");
      if (scan_failed()) throw StreamError("reachability answer after the exit scan could not be made");
      if (reach_started_) throw StreamError("a second reachability answer");
      if (reach.blocks != sent_list_.size() / 2) throw StreamError("reachability answer for another list");
      if (reach.header.size != message.size() - at) throw StreamError("reachability answer not at the end of its message");
      reach_expected_ = (reach.blocks + 63) / 64 * 8;
      reach_root_bytes_ = reach.roots_bytes;
      reach_started_ = true;
      reach_bytes_.assign(message.begin() + static_cast<std::ptrdiff_t>(at + sizeof(agent::ReachRecord)),
                          message.end());
      if (reach_bytes_.size() > reach_expected_) throw StreamError("reachability answer longer than announced");
      reach_complete_ = reach_bytes_.size() == reach_expected_;
      return;
    }
    if (header.size < sizeof(RecordHeader) || header.size % 8 != 0 || header.size > message.size() - at) {
      throw StreamError("record of impossible size " + std::to_string(header.size));
    }
    if (header.kind == RecordKind::kSite) ++sites;
    record(message.data() + at, header.size);
    at += header.size;
  }
  sites_lately_ = sites > 0;
}

void AgentSource::record(const unsigned char* at, std::uint32_t size) {
  const auto kind = read_as<RecordHeader>(at).kind;
  const auto need = [&](std::size_t bytes) {
    if (size < bytes) throw StreamError("record too short for its kind");
  };
  switch (kind) {
    case RecordKind::kHello: {
      need(sizeof(agent::HelloRecord));
      const auto hello = read_as<agent::HelloRecord>(at);
      if (hello.magic != agent::kProtocolMagic) throw StreamError("not a tleak agent stream");
      if (hello.version != agent::kProtocolVersion) {
        throw StreamError("agent stream version " + std::to_string(hello.version) + ", expected " +
                          std::to_string(agent::kProtocolVersion) + " (agent and tleak from different builds)");
      }
      if (hello_seen_) {
        // The program exec'd another image: the old heap is gone. The report follows the new one.
        reset();
      }
      hello_seen_ = true;
      ++images_;
      ++module_changes_;
      pid_ = hello.pid;
      const std::uint32_t after_hello = size - static_cast<std::uint32_t>(sizeof(agent::HelloRecord));
      if (hello.python_target_bytes > after_hello) throw StreamError("hello longer than its size");
      python_target_ = string_at(at + sizeof(agent::HelloRecord), hello.python_target_bytes);
      executable_ = string_at(at + sizeof(agent::HelloRecord) + hello.python_target_bytes, after_hello - hello.python_target_bytes);
      if (hello.python_main > agent::PythonMainCode::kStdin) {
        throw StreamError("hello naming an unknown Python main code " +
                          std::to_string(static_cast<std::uint32_t>(hello.python_main)));
      }
      python_main_code_ = hello.python_main;
      if (hello.shadowed >> agent::kInterposedFunctionCount != 0) throw StreamError("hello naming unknown functions");
      shadowed_functions_ = hello.shadowed;
      if ((hello.flags & ~agent::kHelloKnownFlags) != 0) throw StreamError("hello with unknown flags");
      python_small_objects_unseen_ = (hello.flags & agent::kHelloPythonSmallObjectsUnseen) != 0;
      if (hello.sample_ns > 0) sample_ns_ = hello.sample_ns;
      return;
    }
    case RecordKind::kModule: {
      need(sizeof(agent::ModuleRecord));
      const auto m = read_as<agent::ModuleRecord>(at);
      if (sizeof(agent::ModuleRecord) + std::uint64_t{m.build_id_bytes} + m.path_bytes > size) {
        throw StreamError("module record longer than its size");
      }
      const unsigned char* tail = at + sizeof(agent::ModuleRecord);
      ModuleInfo info;
      info.start = m.start;
      info.end = m.end;
      info.load_bias = m.load_bias;
      info.build_id.assign(reinterpret_cast<const char*>(tail), m.build_id_bytes);
      info.path = string_at(tail + m.build_id_bytes, m.path_bytes);
      // The agent sends the whole map when it changes: keep one entry per loaded range.
      const auto same = std::find_if(modules_.begin(), modules_.end(), [&](const ModuleInfo& o) {
        return o.start == info.start && o.path == info.path;
      });
      if (same == modules_.end()) {
        modules_.push_back(std::move(info));
        ++module_changes_;
      }
      return;
    }
    case RecordKind::kSite: {
      need(sizeof(agent::SiteRecord));
      const auto s = read_as<agent::SiteRecord>(at);
      const std::uint64_t shared = std::uint64_t{s.prefix} + s.suffix;
      if (s.depth > agent::kMaxFrames || shared > s.depth) throw StreamError("site record with an impossible depth");
      const std::uint32_t middle = s.depth - static_cast<std::uint32_t>(shared);
      if (sizeof(agent::SiteRecord) + std::uint64_t{middle} * 8 > size) throw StreamError("site record shorter than its frames");
      if (s.thread >= agent::kMaxThreadBuffers) throw StreamError("site record of thread " + std::to_string(s.thread) + ", out of range");
      if (s.slot >= agent::kStackSlots) throw StreamError("stack slot " + std::to_string(s.slot) + " out of range");
      define_stack(s, at + sizeof(agent::SiteRecord));
      return;
    }
    case RecordKind::kPythonFrame: {
      need(sizeof(agent::PythonFrameRecord));
      const auto p = read_as<agent::PythonFrameRecord>(at);
      if (sizeof(agent::PythonFrameRecord) + std::uint64_t{p.file_bytes} + p.function_bytes > size) {
        throw StreamError("Python frame record longer than its size");
      }
      Frame frame;
      frame.kind = FrameKind::kPython;
      frame.file = string_at(at + sizeof(agent::PythonFrameRecord), p.file_bytes);
      frame.module = frame.file;
      frame.function = string_at(at + sizeof(agent::PythonFrameRecord) + p.file_bytes, p.function_bytes);
      frame.line = p.line > 0 ? p.line : 0;
      // Python counts them from 0; past a megabyte a line is no source a person reads.
      if (frame.line > 0 && p.column >= 0 && p.column < agent::kMaxPythonColumn) {
        frame.column = p.column + 1;
        if (p.end_column > p.column && p.end_column <= agent::kMaxPythonColumn) frame.end_column = p.end_column + 1;
      }
      frame.address = agent::kPythonFrameBit | p.id;
      if (p.id < agent::kMaxSites) {
        std::string place = frame.file + '\0' + frame.function + '\0' + std::to_string(frame.line) + ':' +
                            std::to_string(frame.column) + '-' + std::to_string(frame.end_column);
        const std::uint32_t first = python_by_place_.try_emplace(std::move(place), p.id).first->second;
        if (python_same_.size() <= p.id) python_same_.resize(std::size_t{p.id} + 1, 0);
        python_same_[p.id] = first;
        python_ids_merged_ = python_ids_merged_ || first != p.id;
      }
      python_frames_[p.id] = std::move(frame);
      return;
    }
    case RecordKind::kAlloc:
      need(sizeof(agent::AllocRecord));
      alloc_record(at);
      return;
    case RecordKind::kFree:
      need(sizeof(agent::FreeRecord));
      free_record(at);
      return;
    case RecordKind::kFence:
    case RecordKind::kMark:
    case RecordKind::kSnapshot:
    case RecordKind::kExit:
    case RecordKind::kFlush:
    case RecordKind::kFinalizing:
      fence(static_cast<std::uint16_t>(kind), at, size);
      return;
    case RecordKind::kScanned:
      if (!list_sent_) throw StreamError("exit scan done before tleak sent its live list");
      if (reach_started_) throw StreamError("exit scan done after its answer");
      scan_done_ = true;
      return;
    case RecordKind::kScanFailed: {
      if (!list_sent_) throw StreamError("exit scan failed before tleak sent its live list");
      if (reach_started_ || scan_failed()) throw StreamError("exit scan failed after its answer or failure");
      const std::uint16_t why = read_as<RecordHeader>(at).reserved;
      if (why == static_cast<std::uint16_t>(agent::ScanFailure::kNone) || why > agent::kMaxScanFailure) {
        throw StreamError("exit scan failed for an unknown reason " + std::to_string(why));
      }
      scan_failure_ = static_cast<agent::ScanFailure>(why);
      scan_done_ = true;
      return;
    }
    case RecordKind::kReachMore:
      throw StreamError("reachability piece without an answer before it");
    case RecordKind::kReach:
    // Alone in its message, and read by the session (MessageSlotArea) before the source sees it.
    case RecordKind::kSlot:
      break;
  }
  throw StreamError("unknown record kind " + std::to_string(static_cast<unsigned>(kind)));
}

// The two records of nearly every message. Their fields are read one by one: a copy of the whole
// record to the stack, read back into the pending entry, stalled on every record where a load
// spanned two of the copy's stores (two thirds of the decoding's time). Each field is read once: a
// message slot is memory the program could write to meanwhile.
void AgentSource::alloc_record(const unsigned char* at) {
  const auto slot = read_as<std::uint32_t>(at + offsetof(agent::AllocRecord, slot));
  const auto thread = read_as<std::uint32_t>(at + offsetof(agent::AllocRecord, thread));
  const auto bytes = read_as<std::uint64_t>(at + offsetof(agent::AllocRecord, size));
  // The thread's slot for the allocation's stack, named by a site record of the thread before.
  const std::uint64_t index = std::uint64_t{thread} * agent::kStackSlots + slot;
  if (slot >= agent::kStackSlots || index >= slot_sites_.size() || slot_sites_[index] == kNoSite) [[unlikely]] {
    throw StreamError("allocation from stack slot " + std::to_string(slot) + " of thread " + std::to_string(thread) +
                      ", which no site record named");
  }
  const std::uint32_t site = slot_sites_[index];
  if (bytes > kMaxAddressSpace) [[unlikely]] {
    throw StreamError("allocation of " + std::to_string(bytes) + " bytes, past any address space");
  }
  const auto address = read_as<std::uint64_t>(at + offsetof(agent::AllocRecord, address));
  // The agent records no null block; the live table keeps 0 for an empty slot.
  if (address == 0) [[unlikely]] throw StreamError("allocation at address 0");
  add_pending({read_as<std::uint64_t>(at + offsetof(agent::AllocRecord, ns)), address, bytes, site, false});
  if (site == kUnknownStackSite) stacks_overflowed_ = true;
  allocating_threads_ |= std::uint64_t{1} << (thread % 64);
  // An upper bound for the budget guard: it need not grow past any address space either (both
  // terms are below 2^56, so the sum cannot overflow before it is capped).
  pending_allocated_ = std::min(pending_allocated_ + static_cast<std::int64_t>(bytes), static_cast<std::int64_t>(kMaxAddressSpace));
}

void AgentSource::free_record(const unsigned char* at) {
  const auto address = read_as<std::uint64_t>(at + offsetof(agent::FreeRecord, address));
  // A free of address 0 had found the live table's first empty slot and taken it: the count of
  // live blocks wrapped (found by the fuzzer).
  if (address == 0) [[unlikely]] throw StreamError("free of address 0");
  add_pending({read_as<std::uint64_t>(at + offsetof(agent::FreeRecord, ns)), address, 0, 0, true});
}

void AgentSource::define_stack(const agent::SiteRecord& s, const unsigned char* middle_words) {
  if (s.thread >= last_stacks_.size()) {
    last_stacks_.resize(s.thread + 1);
    slot_sites_.resize(std::size_t{s.thread + 1} * agent::kStackSlots, kNoSite);
  }
  LastStack& last = last_stacks_[s.thread];
  const std::uint32_t middle = s.depth - s.prefix - s.suffix;
  if (std::size_t{s.prefix} + s.suffix > last.frames.size()) {
    throw StreamError("site record shares more frames than its thread's previous one has");
  }
  // The stack in full: the shared frames from the thread's previous one, the rest from the record.
  std::uintptr_t frames[agent::kMaxFrames];
  std::copy_n(last.frames.begin(), s.prefix, frames);
  std::memcpy(frames + s.prefix, middle_words, std::size_t{middle} * 8);
  std::copy_n(last.frames.end() - s.suffix, s.suffix, frames + s.prefix + middle);
  // A stack whose Python frames the agent named by another id of the same place is the stack of
  // the first: its frames and key are those.
  std::uintptr_t merged[agent::kMaxFrames];
  const bool rewritten = python_ids_merged_ && merge_python_ids(frames, s.depth, merged);
  agent::StackHash key{s.key_a, s.key_b};
  if (rewritten) key = agent::stack_hash(reinterpret_cast<const std::uint64_t*>(merged), s.depth);
  const std::uintptr_t* const kept = rewritten ? merged : frames;
  std::uint32_t site = site_keys_.find(key.a, key.b);
  if (site == 0 && next_site_ < max_sites_) {
    // A stack no thread sent before: a site of its own. Its frames are kept against the previous
    // record's site where they share some, unless that chain is already as long as allowed.
    site = next_site_++;
    site_keys_.insert(key.a, key.b, site);
    if (site_spans_.size() <= site) site_spans_.resize(site + 1);
    StackSpan span;
    span.depth = static_cast<std::uint8_t>(s.depth);
    const bool against = s.prefix + s.suffix > 0 && last.site != kUnknownStackSite &&
                         site_spans_[last.site].chain < kMaxSpanChain;
    const std::uint32_t own = against ? middle : s.depth;
    if (against) {
      span.base = last.site;
      span.prefix = static_cast<std::uint8_t>(s.prefix);
      span.suffix = static_cast<std::uint8_t>(s.suffix);
      span.chain = static_cast<std::uint8_t>(site_spans_[last.site].chain + 1);
    }
    if (frame_chunks_.empty() || chunk_used_ + own > kFrameChunkWords) {
      frame_chunks_.push_back(std::make_unique_for_overwrite<std::uintptr_t[]>(kFrameChunkWords));
      chunk_used_ = 0;
    }
    std::uintptr_t* first = frame_chunks_.back().get() + chunk_used_;
    std::memcpy(first, against ? kept + s.prefix : kept, std::size_t{own} * 8);
    chunk_used_ += own;
    span.middle = first;
    site_spans_[site] = span;
    if (s.depth == 0) empty_stack_sites_.push_back(site);
  }
  slot_sites_[std::size_t{s.thread} * agent::kStackSlots + s.slot] = site;
  last.frames.assign(frames, frames + s.depth);
  last.site = site;
}

bool AgentSource::merge_python_ids(const std::uintptr_t* frames, std::uint32_t depth, std::uintptr_t* merged) const {
  bool changed = false;
  for (std::uint32_t k = 0; k < depth; ++k) {
    merged[k] = frames[k];
    if ((frames[k] & agent::kPythonFrameBit) == 0 || (frames[k] & agent::kPythonGapBit) != 0) continue;
    const std::uint64_t id = frames[k] & ~agent::kPythonFrameBit;
    if (id < python_same_.size() && python_same_[id] != 0 && python_same_[id] != id) {
      merged[k] = agent::kPythonFrameBit | python_same_[id];
      changed = true;
    }
  }
  return changed;
}

void AgentSource::apply_free(std::uint64_t address) {
  Live live;
  if (!live_.take(address, &live)) {
    // Allocated before the agent was ready, or by the agent's own machinery: not the program's
    // to answer for, and not counted.
    return;
  }
  recorder_->freed(SiteId(live.site), AllocatorId(0), live.size);
}

BlockInfo AgentSource::block_info(std::uint64_t address, const Live& live) const {
  // What Recorder::finish reads of a block that reports no uses: its site, allocator and size.
  BlockInfo block;
  block.site = SiteId(live.site);
  block.allocator = AllocatorId(0);
  block.address = reinterpret_cast<const void*>(address);
  block.size = live.size;
  block.tag = AllocTag{"malloc"};
  return block;
}

void AgentSource::drain_epoch() {
  const auto before = [](const Pending& a, const Pending& b) {
    if (happened_before(a, b)) return true;
    return !happened_before(b, a) && &a < &b;  // arrival
  };
  // Each thread's records arrive in order: one thread's epoch (the common case) is sorted already,
  // and several threads' are their sorted buffers interleaved.
  // Records ahead in arrival order are (for one thread's epoch, the common case, exactly) those
  // applied next: their slots are fetched while this one is applied.
  constexpr std::size_t kAhead = 16;
  // Only past the caches: a small table is there already, and asking costs a probe per record.
  const bool ahead = live_.size() > (std::size_t{1} << 16);
  visit_runs_in_order(pending_, run_begins_, before, [this, ahead](const Pending& p) {
    const auto at = static_cast<std::size_t>(&p - pending_.data());
    if (ahead && at + kAhead < pending_.size()) {
      const Pending& later = pending_[at + kAhead];
      live_.prefetch(later.address);
      if (!later.is_free) recorder_->prefetch(SiteId(later.site));
    }
    // Half as far ahead, a free's block is in the cache: its site's record can be asked for.
    if (ahead && at + kAhead / 2 < pending_.size() && pending_[at + kAhead / 2].is_free) {
      if (const Live* block = live_.find(pending_[at + kAhead / 2].address)) recorder_->prefetch(SiteId(block->site));
    }
    ++clock_;
    if (p.is_free) {
      apply_free(p.address);
      return;
    }
    const Live live{p.size, p.site, list_sent_};
    if (!live_.insert(p.address, live)) {
      // An address handed out again without a free the agent saw (freed by code it does not
      // interpose): the old block ended here.
      apply_free(p.address);
      live_.insert(p.address, live);
    }
    // Blocks of a real process never hold more than its address space; a stream that says they
    // do would overflow every sum after it.
    if (recorder_->live_bytes() > static_cast<std::int64_t>(kMaxAddressSpace - p.size)) {
      throw StreamError("live blocks past any address space");
    }
    recorder_->allocated(SiteId(p.site), AllocatorId(0), p.size);
  });
  pending_.clear();
  run_begins_.clear();
  pending_allocated_ = 0;
}

void AgentSource::fence(std::uint16_t kind, const unsigned char* at, std::uint32_t size) {
  if (size < sizeof(agent::FenceRecord)) throw StreamError("fence record too short");
  const auto f = read_as<agent::FenceRecord>(at);
  if (sizeof(agent::FenceRecord) + std::uint64_t{f.name_bytes} > size) throw StreamError("fence name too long");
  drain_epoch();
  ++fences_;
  switch (static_cast<RecordKind>(kind)) {
    case RecordKind::kMark:
      if (!user_marks_) {
        // The program keeps its own iterations: the time samples so far were only a stand-in.
        user_marks_ = true;
        iteration_ = 0;
        recorder_->clear_marks();
      }
      ++iteration_;
      recorder_->mark(iteration_, clock_, {});
      break;
    case RecordKind::kFinalizing:
      finalizing_ = true;
      break;
    case RecordKind::kFence:
      if (!user_marks_ && !finalizing_) {
        ++iteration_;
        recorder_->mark(iteration_, clock_, {});
      }
      break;
    case RecordKind::kSnapshot:
      if (on_snapshot) on_snapshot(string_at(at + sizeof(agent::FenceRecord), f.name_bytes));
      break;
    case RecordKind::kExit:
      exit_requested_ = true;
      exiting_thread_ = f.thread_id;
      break;
    default:
      break;
  }
  if (on_fence) on_fence();
}

const std::vector<std::uint64_t>& AgentSource::live_list() const {
  std::vector<std::pair<std::uint64_t, Live>> sorted;
  sorted.reserve(live_.size());
  live_.for_each([&](std::uint64_t address, const Live& live) { sorted.emplace_back(address, live); });
  std::sort(sorted.begin(), sorted.end(),
            [](const std::pair<std::uint64_t, Live>& a, const std::pair<std::uint64_t, Live>& b) { return a.first < b.first; });
  sent_list_.clear();
  sent_list_.reserve(sorted.size() * 2);
  sent_sites_.clear();
  sent_sites_.reserve(sorted.size());
  for (const auto& [address, live] : sorted) {
    sent_list_.push_back(address);
    sent_list_.push_back(live.size);
    sent_sites_.push_back(live.site);
  }
  listed_at_ = applied();
  list_sent_ = true;
  return sent_list_;
}

void AgentSource::judge_sites_at_exit(const ClassifierOptions& options, std::size_t max_findings) {
  drain_epoch();
  judgements_ = std::make_unique<SiteJudgements>(
      judge_sites(recorder_->set_end({clock_, iteration_, clock_ + 1}), options, best_bounded_for(max_findings)));
  judged_at_ = applied();
}

Recording AgentSource::finish() {
  drain_epoch();
  if (applied() != judged_at_) judgements_.reset();
  std::vector<BlockInfo> leaked, unfreed, unjudged;
  // Records that came after the list was made (a thread still running as the program exited) take
  // the blocks they free out of the scan's judgement, and the blocks they allocate are judged by
  // none of it.
  const bool scanned = reach_complete_;
  // Sized before they are filled: grown by doubling, tens of thousands of blocks at a program's
  // exit were copied several times into memory each copy had to fault in.
  if (scanned) {
    std::size_t reachable_count = 0;
    for (std::size_t i = 0; i < sent_list_.size() / 2; ++i) reachable_count += (reach_bytes_[i / 8] >> (i % 8)) & 1;
    unfreed.reserve(reachable_count);
    leaked.reserve(sent_list_.size() / 2 - reachable_count);
    const bool unchanged = applied() == listed_at_;
    for (std::size_t i = 0; i < sent_list_.size() / 2; ++i) {
      const std::uint64_t address = sent_list_[2 * i];
      const Live listed{sent_list_[2 * i + 1], unchanged ? sent_sites_[i] : 0};
      const Live* live = unchanged ? &listed : live_.find(address);
      if (live == nullptr || live->after_list) continue;  // freed since (and maybe its address taken again)
      const bool reachable = (reach_bytes_[i / 8] >> (i % 8)) & 1;
      (reachable ? unfreed : leaked).push_back(block_info(address, *live));
    }
    if (!unchanged) {
      live_.for_each([&](std::uint64_t address, const Live& live) {
        if (live.after_list) unjudged.push_back(block_info(address, live));
      });
    }
  } else {
    unfreed.reserve(live_.size());
    live_.for_each([&](std::uint64_t address, const Live& live) { unfreed.push_back(block_info(address, live)); });
  }
  // In the live table's order: the recording only adds these up, by site (their sort by block, of
  // tens of thousands of 96-byte descriptions at a PyTorch program's exit, cost the report 2 ms).
  return recorder_->finish({clock_, iteration_, clock_ + 1}, {}, leaked, unfreed,
                           scanned ? RunEnd::kExitScan : RunEnd::kNoExitScan, unjudged);
}

Recording AgentSource::snapshot() const { return recorder_->snapshot({clock_, iteration_, clock_ + 1}); }

std::vector<std::uintptr_t> AgentSource::stack(SiteId site) const {
  std::vector<std::uintptr_t> frames;
  if (site.value() >= site_spans_.size() || site_spans_[site.value()].middle == nullptr) return frames;
  const StackSpan& span = site_spans_[site.value()];
  frames.reserve(span.depth);
  for (std::size_t k = 0; k < span.depth; ++k) frames.push_back(frame_at(span, k));
  return frames;
}

// Frame k of a span's stack: one of its own, or its base's at the same distance from the same end,
// up a chain define_stack() keeps within kMaxSpanChain.
std::uintptr_t AgentSource::frame_at(const StackSpan& span, std::size_t k) const {
  const StackSpan* at = &span;
  while (k < at->prefix || k >= std::size_t{at->depth} - at->suffix) {
    const StackSpan& base = site_spans_[at->base];
    if (k >= at->prefix) k = base.depth - (at->depth - k);
    at = &base;
  }
  return at->middle[k - at->prefix];
}

std::vector<ModuleInfo> AgentSource::modules() const { return modules_; }

void AgentSource::resolve(std::uintptr_t word, Symbolizer& symbolizer, std::vector<Frame>& stack) const {
  if ((word & agent::kPythonFrameBit) == 0) {
    // Past the kernel's signal frame, the address is where the interrupted frame stopped, not a
    // return address (looked up as one, a frame stopped at a function's first instruction was named
    // by the function before it).
    if (!stack.empty() && stack.back().kind == FrameKind::kNative && stack.back().function == kSignalFrameName) {
      symbolizer.append_frames_where_stopped(word, stack);
    } else {
      symbolizer.append_frames(word, stack);
    }
    return;
  }
  if ((word & agent::kPythonGapBit) != 0) {
    // The agent went past the kept Python frames to the innermost one of the user's code.
    const auto left_out = static_cast<std::uint32_t>(word);
    Frame gap;
    gap.kind = FrameKind::kPython;
    char text[64];
    std::snprintf(text, sizeof text, "(%s left out)", counted(left_out, "Python frame", "Python frames").c_str());
    gap.function = text;
    stack.push_back(std::move(gap));
    return;
  }
  const auto it = python_frames_.find(static_cast<std::uint32_t>(word & ~agent::kPythonFrameBit));
  if (it != python_frames_.end()) {
    stack.push_back(it->second);
    return;
  }
  Frame unknown;
  unknown.kind = FrameKind::kPython;
  unknown.function = "?? (Python frame not described)";
  stack.push_back(std::move(unknown));
}

}  // namespace tleak::diagnosis
