// The parent's side of the agent's stream, fed hand-built messages: records put back in time
// order, sites and their stacks kept, and malformed input refused with StreamError.
#include "tleak/diagnosis/agent_source.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <cstring>
#include <vector>

#include "agent_messages.h"
#include "signal_trampoline.h"
#include "tleak/agent/protocol.h"
#include "tleak/symbolizer.h"

namespace tleak::diagnosis {
namespace {

namespace agent = tleak::agent;
using tleak::testing::alloc;
using tleak::testing::fence;
using tleak::testing::free_of;
using tleak::testing::hello;
using tleak::testing::mark;
using tleak::testing::Message;
using tleak::testing::site;
using tleak::testing::site_against;

[[gnu::noinline]] int stopped_at_first_instruction(int x) {
  __asm__ volatile("" ::: "memory");
  return x + 1;
}

// The frame after the kernel's signal frame is where a signal stopped the thread, not a return
// address: a thread stopped at a function's first instruction is in that function, which the byte
// before it (where a return address's call is) is not.
TEST(AgentSource, TheFrameASignalStoppedIsLookedUpWhereItStopped) {
  const std::uintptr_t trampoline = tleak::testing::signal_trampoline();
  ASSERT_NE(trampoline, 0u);
  const auto stopped_at = reinterpret_cast<std::uintptr_t>(&stopped_at_first_instruction);
  AgentSource source;
  Symbolizer symbolizer;
  std::vector<Frame> stack;
  source.resolve(trampoline, symbolizer, stack);
  ASSERT_EQ(stack.size(), 1u);
  ASSERT_EQ(stack[0].function, kSignalFrameName);
  source.resolve(stopped_at, symbolizer, stack);
  ASSERT_EQ(stack.size(), 2u);
  EXPECT_NE(stack[1].function.find("stopped_at_first_instruction"), std::string::npos) << stack[1].function;
  EXPECT_EQ(stack[1].address, stopped_at);
  // Elsewhere the same address is a return address: the byte before it is another function's.
  std::vector<Frame> elsewhere;
  source.resolve(stopped_at, symbolizer, elsewhere);
  ASSERT_EQ(elsewhere.size(), 1u);
  EXPECT_EQ(elsewhere[0].function.find("stopped_at_first_instruction"), std::string::npos) << elsewhere[0].function;
  EXPECT_EQ(stopped_at_first_instruction(1), 2);
}

// CPython 3.11 runs a call from one of two instructions of its expression (PRECALL once it is
// specialized, CALL before), and the agent names a Python frame by its instruction: two ids of one
// place in the script. tleak makes them one frame, and their stacks one site, keyed as the agent
// keys the stack of the first id; another call on the line stays apart.
TEST(AgentSource, TwoInstructionsOfOneCallAreOneSite) {
  AgentSource source;
  const auto python = [](std::uint64_t id) { return agent::kPythonFrameBit | id; };
  Message m;
  m.add(hello());
  for (const Message& p : {tleak::testing::python_frame(5, "/srv/loop.py", "<module>", 14, 26, 41),
                           tleak::testing::python_frame(6, "/srv/loop.py", "<module>", 14, 26, 41),
                           tleak::testing::python_frame(7, "/srv/loop.py", "<module>", 14, 45, 60)}) {
    m.add_bytes(p.bytes());
  }
  tleak::testing::add_site_hashed(m, 1, {0x401000, python(6)});  // a stack of the second id first
  tleak::testing::add_site_hashed(m, 2, {0x401000, python(5)});
  tleak::testing::add_site_hashed(m, 3, {0x401000, python(7)});
  m.add(alloc(10, 0x1000, 100, 1)).add(alloc(20, 0x2000, 100, 2)).add(alloc(30, 0x3000, 8, 3)).add(mark(1));
  source.consume(m.bytes());
  const Recording rec = source.finish();
  ASSERT_EQ(rec.sites.size(), 3u);  // site 0 (no stack) and two
  EXPECT_EQ(rec.sites[1].allocations, 2u);
  EXPECT_EQ(rec.sites[1].live_bytes, 200);
  EXPECT_EQ(rec.sites[2].allocations, 1u);
  EXPECT_EQ(source.stack(SiteId(1)), (std::vector<std::uintptr_t>{0x401000, python(5)}));
  EXPECT_EQ(source.stack(SiteId(2)), (std::vector<std::uintptr_t>{0x401000, python(7)}));
}

TEST(AgentSource, RecordsOfTwoThreadsArePutBackInTimeOrder) {
  AgentSource source;
  Message m;
  m.add(hello()).add(site(1, 2), {0x401000, 0x402000}).add(site(2, 1), {0x403000});
  // Thread B's buffer arrives first, though thread A allocated the address before B freed it.
  m.add(free_of(20, 0x1000)).add(alloc(30, 0x2000, 64, 2));
  m.add(alloc(10, 0x1000, 100, 1)).add(alloc(25, 0x3000, 8, 1));
  m.add(mark(1));
  source.consume(m.bytes());
  EXPECT_EQ(source.live_bytes(), 72);  // the free at 20 found the block allocated at 10
  EXPECT_EQ(source.stack(SiteId(1)), (std::vector<std::uintptr_t>{0x401000, 0x402000}));
  EXPECT_EQ(source.stack(SiteId(2)), (std::vector<std::uintptr_t>{0x403000}));
  EXPECT_TRUE(source.stack(SiteId(3)).empty());
  const Recording rec = source.finish();
  ASSERT_GE(rec.sites.size(), 3u);
  EXPECT_EQ(rec.sites[1].allocations, 2u);
  EXPECT_EQ(rec.sites[1].frees, 1u);
  EXPECT_EQ(rec.sites[1].peak_live_bytes, 100);  // freed before its second block came
  EXPECT_EQ(rec.sites[2].live_bytes, 64);
  EXPECT_EQ(rec.iterations, 1u);
}

TEST(AgentSource, AFlushOrdersTheBacklogAndSamplesNothing) {
  AgentSource source;
  Message m;
  m.add(hello()).add(site(1, 1), {0x401000});
  m.add(alloc(10, 0x1000, 100, 1)).add(tleak::testing::fence(agent::RecordKind::kFence, 1));
  // Thread B's buffer arrives first: it reuses the address at 40 that thread A freed at 30. In
  // arrival order the free would end B's new block (live 0); in time order it ends the old one.
  m.add(alloc(40, 0x1000, 8, 1)).add(free_of(30, 0x1000));
  source.consume(m.bytes());
  EXPECT_EQ(source.live_bytes(), 100);  // nothing after the time sample is ordered yet
  EXPECT_EQ(source.pending_allocated_bytes(), 8);
  Message flush;
  flush.add(tleak::testing::fence(agent::RecordKind::kFlush, 2));
  source.consume(flush.bytes());
  EXPECT_EQ(source.live_bytes(), 8);
  EXPECT_FALSE(source.wants_flush());
  // A time sample is an iteration of the time clock; the flush is not.
  EXPECT_EQ(source.finish().iterations, 1u);
}

// Once the Python interpreter begins finalizing, time samples stop: a site's series ends where
// the program's own work did, not in the teardown that frees what the program kept. Its frees
// still count (the live bytes at exit are the program's), and the program's own marks would too.
TEST(AgentSource, TimeSamplesStopAsTheInterpreterFinalizes) {
  AgentSource source;
  Message m;
  m.add(hello()).add(site(1, 1), {0x401000});
  m.add(alloc(10, 0x1000, 100, 1)).add(tleak::testing::fence(agent::RecordKind::kFence, 1));
  m.add(alloc(20, 0x2000, 100, 1)).add(tleak::testing::fence(agent::RecordKind::kFence, 2));
  m.add(tleak::testing::fence(agent::RecordKind::kFinalizing, 3));
  m.add(free_of(30, 0x1000)).add(tleak::testing::fence(agent::RecordKind::kFence, 4));
  m.add(free_of(40, 0x2000)).add(tleak::testing::fence(agent::RecordKind::kFence, 5));
  source.consume(m.bytes());
  EXPECT_EQ(source.live_bytes(), 0);
  const Recording rec = source.finish();
  EXPECT_EQ(rec.iterations, 2u);
  const auto site = std::find_if(rec.sites.begin(), rec.sites.end(), [](const SiteRecord& s) { return s.allocations > 0; });
  ASSERT_NE(site, rec.sites.end());
  EXPECT_EQ(site->series(rec.marks.size()), (std::vector<std::int64_t>{100, 200}));
  EXPECT_EQ(site->frees, 2u);
}

TEST(AgentSource, ABacklogPastTheCachesAsksForAFlush) {
  AgentSource source;
  Message m;
  m.add(hello()).add(site(1, 1), {0x401000});
  source.consume(m.bytes());
  std::uint64_t ns = 0;
  while (!source.wants_flush()) {
    ASSERT_LT(ns, 1u << 24) << "a backlog of millions of records never asked for a flush";
    Message pairs;
    for (int k = 0; k < 1000; ++k, ns += 2) pairs.add(alloc(ns, 0x1000, 16, 1)).add(free_of(ns + 1, 0x1000));
    source.consume(pairs.bytes());
  }
  EXPECT_GE(ns, 1u << 15);  // not at the first records: one flush orders tens of thousands
  EXPECT_EQ(source.live_bytes(), 0);
  EXPECT_EQ(source.pending_allocated_bytes(), static_cast<std::int64_t>(ns / 2 * 16));  // none applied yet
  Message flush;
  flush.add(tleak::testing::fence(agent::RecordKind::kFlush, 1));
  source.consume(flush.bytes());
  EXPECT_FALSE(source.wants_flush());
  EXPECT_EQ(source.pending_allocated_bytes(), 0);
  const Recording rec = source.finish();
  ASSERT_GE(rec.sites.size(), 2u);
  EXPECT_EQ(rec.sites[1].allocations, ns / 2);
  EXPECT_EQ(rec.sites[1].frees, ns / 2);
}

TEST(AgentSource, ASiteWrittenAgainstAnotherGetsItsWholeStackBack) {
  AgentSource source;
  Message m;
  m.add(hello()).add(site(1, 5), {0xa1, 0xa2, 0xa3, 0xa4, 0xa5});
  // Shares two innermost and one outermost frame with site 1; two of its own in between.
  m.add(site_against(2, 5, 2, 1), {0xb3, 0xb4});
  // Against site 2, and one frame shorter: only the outermost frames line up.
  m.add(site_against(3, 4, 0, 3), {0xc1});
  // Everything shared: the previous record's stack again (under another key: another site).
  m.add(site_against(4, 4, 4, 0));
  source.consume(m.bytes());
  EXPECT_EQ(source.stack(SiteId(2)), (std::vector<std::uintptr_t>{0xa1, 0xa2, 0xb3, 0xb4, 0xa5}));
  EXPECT_EQ(source.stack(SiteId(3)), (std::vector<std::uintptr_t>{0xc1, 0xb3, 0xb4, 0xa5}));
  EXPECT_EQ(source.stack(SiteId(4)), source.stack(SiteId(3)));
  EXPECT_EQ(source.stack(SiteId(1)), (std::vector<std::uintptr_t>{0xa1, 0xa2, 0xa3, 0xa4, 0xa5}));
}

TEST(AgentSource, SiteRecordsThatCannotBeRebuiltAreRefused) {
  const auto refused = [](Message& m) {
    AgentSource source;
    EXPECT_THROW(source.consume(m.bytes()), StreamError);
  };
  Message shared_without_previous;  // the thread sent no stack before
  shared_without_previous.add(hello()).add(site_against(1, 2, 1, 0), {0xa2});
  refused(shared_without_previous);
  Message too_much_shared;  // more than the previous stack has
  too_much_shared.add(hello()).add(site(1, 2), {0xa1, 0xa2}).add(site_against(2, 3, 2, 1));
  refused(too_much_shared);
  Message other_thread;  // the frames shared are the same thread's: thread 1 sent none
  other_thread.add(hello()).add(site(1, 2), {0xa1, 0xa2});
  auto theirs = tleak::testing::site_keyed(2, 2, 2, 1);
  theirs.prefix = 1;
  other_thread.add(theirs, {0xb2});
  refused(other_thread);
  Message short_tail;  // announces three frames of its own, carries one
  short_tail.add(hello()).add(site(1, 3), {0xa1});
  refused(short_tail);
}

// Each record is written against its thread's previous one, however long the run of them. Past
// kMaxSpanChain sites kept against each other, the parent keeps the next one's frames in full and
// starts over: every stack comes back whole either way, whether it shares its outermost frames
// with the one before (thread 0) or its innermost (thread 1).
TEST(AgentSource, ALongRunOfSitesWrittenAgainstEachOtherComesBackWhole) {
  AgentSource source;
  Message m;
  m.add(hello()).add(site(1, 2), {0x1001, 0xa1});
  constexpr std::uint32_t kSites = 3 * AgentSource::kMaxSpanChain + 5;
  for (std::uint32_t id = 2; id <= kSites; ++id) m.add(site_against(id, 2, 0, 1), {0x1000 + id});
  // Thread 1's stacks: the same innermost frame, their own outermost.
  m.add(tleak::testing::site_keyed(1, 2, 1000 + 1, 1), {0xb1, 0x2001});
  for (std::uint32_t id = 2; id <= kSites; ++id) {
    auto s = tleak::testing::site_keyed(id, 2, 1000 + id, 1);
    s.prefix = 1;
    m.add(s, {0x2000 + id});
  }
  source.consume(m.bytes());
  for (std::uint32_t id = 1; id <= kSites; ++id) {
    EXPECT_EQ(source.stack(SiteId(id)), (std::vector<std::uintptr_t>{0x1000 + id, 0xa1})) << id;
    EXPECT_EQ(source.stack(SiteId(kSites + id)), (std::vector<std::uintptr_t>{0xb1, 0x2000 + id})) << id;
  }
}

// The parent tells stacks apart: the same stack from two threads, under any slot, is one site; a
// slot named again stands for its new stack from there on.
TEST(AgentSource, EqualStacksAreOneSiteAndASlotNamedAgainIsItsNewStack) {
  using tleak::testing::site_keyed;
  AgentSource source;
  Message m;
  m.add(hello()).add(site_keyed(5, 1, 77, 0), {0xa1}).add(alloc(1, 0x1000, 16, 5, 0));
  m.add(site_keyed(9, 1, 77, 1), {0xa1}).add(alloc(2, 0x2000, 32, 9, 1));
  m.add(site_keyed(5, 1, 78, 0), {0xb1}).add(alloc(3, 0x3000, 64, 5, 0));
  m.add(alloc(4, 0x4000, 128, 9, 1)).add(mark(1));
  source.consume(m.bytes());
  EXPECT_EQ(source.stack(SiteId(1)), (std::vector<std::uintptr_t>{0xa1}));
  EXPECT_EQ(source.stack(SiteId(2)), (std::vector<std::uintptr_t>{0xb1}));
  const Recording rec = source.finish();
  ASSERT_GE(rec.sites.size(), 3u);
  EXPECT_EQ(rec.sites[1].allocations, 3u);
  EXPECT_EQ(rec.sites[1].live_bytes, 16 + 32 + 128);
  EXPECT_EQ(rec.sites[2].allocations, 1u);
  EXPECT_EQ(rec.sites[2].live_bytes, 64);
}

// Sizes come from outside: none past an address space, and no sum of live blocks either (the
// fuzzer found a stream whose sizes overflowed tleak's live-byte count).
TEST(AgentSource, SizesPastAnyAddressSpaceAreRefused) {
  {
    AgentSource source;
    Message m;
    m.add(hello()).add(site(1, 0)).add(alloc(1, 0x1000, std::uint64_t{1} << 60, 1));
    EXPECT_THROW(source.consume(m.bytes()), StreamError);
  }
  {
    AgentSource source;
    Message m;
    m.add(hello()).add(site(1, 0));
    for (std::uint64_t i = 0; i < 300; ++i) m.add(alloc(i + 1, 0x1000 + i * 16, std::uint64_t{1} << 55, 1));
    m.add(mark(1));
    EXPECT_THROW(source.consume(m.bytes()), StreamError);
  }
  {
    AgentSource source;  // the largest a process could hold is taken as it is
    Message m;
    m.add(hello()).add(site(1, 0)).add(alloc(1, 0x1000, std::uint64_t{1} << 55, 1)).add(mark(1));
    source.consume(m.bytes());
    EXPECT_EQ(source.live_bytes(), std::int64_t{1} << 55);
  }
}

TEST(AgentSource, AFreeOfAnAddressItNeverSawIsIgnored) {
  AgentSource source;
  Message m;
  m.add(hello()).add(site(1, 0)).add(free_of(5, 0x9000)).add(alloc(6, 0x1000, 16, 1)).add(mark(1));
  source.consume(m.bytes());
  EXPECT_EQ(source.live_bytes(), 16);
}

// A program with two blocks live, 16 bytes at 0x1000 and 32 at 0x2000, asks to exit.
void two_blocks_then_exit(AgentSource& source) {
  Message m;
  m.add(hello()).add(site(1, 0)).add(alloc(1, 0x1000, 16, 1)).add(alloc(2, 0x2000, 32, 1));
  m.add(fence(agent::RecordKind::kExit, 1));
  source.consume(m.bytes());
  ASSERT_TRUE(source.exit_requested());
}

// The exit scan judges the blocks live at the exit fence. A thread still inside the agent as the
// process exits may send records after the scan's answer: they are left out (applied, they made the
// live blocks differ from the list scanned, and the scan was thrown away: every block unjudged).
TEST(AgentSource, RecordsAfterTheExitScansAnswerAreLeftOut) {
  AgentSource source;
  two_blocks_then_exit(source);
  EXPECT_EQ(source.live_list(), (std::vector<std::uint64_t>{0x1000, 16, 0x2000, 32}));
  // The answer: the first block reachable, the second not.
  Message answer;
  agent::ReachRecord reach{};
  reach.header = {agent::RecordKind::kReach, 0, static_cast<std::uint32_t>(sizeof reach + 8)};
  reach.blocks = 2;
  reach.roots_bytes = 4096;
  answer.add(reach, {0b01});
  source.consume(answer.bytes());
  ASSERT_TRUE(source.reach_complete());
  // Late: a free of the reachable block and a new allocation.
  source.consume(Message().add(free_of(3, 0x1000)).add(alloc(4, 0x3000, 64, 1)).bytes());
  const Recording rec = source.finish();
  EXPECT_EQ(rec.end, RunEnd::kExitScan);
  ASSERT_EQ(rec.leaked.size(), 1u);
  EXPECT_EQ(rec.leaked[0].size, 32u);
  ASSERT_EQ(rec.unfreed.size(), 1u);
  EXPECT_EQ(rec.unfreed[0].size, 16u);
  EXPECT_EQ(rec.allocations, 2u);
  EXPECT_EQ(rec.frees, 0u);
}

// An exit scan the agent could not make (no room for its work) says so instead of answering: no
// block is judged, the held threads may go, and an answer after it, a second failure, one before
// the list, or one for an unknown reason is refused.
TEST(AgentSource, AnExitScanThatCouldNotBeMadeJudgesNoBlock) {
  struct HeaderOnly {
    agent::RecordHeader header;
  };
  const auto failed = [](std::uint16_t why) { return HeaderOnly{{agent::RecordKind::kScanFailed, why, 0}}; };
  {
    AgentSource source;
    two_blocks_then_exit(source);
    (void)source.live_list();
    EXPECT_FALSE(source.scan_done());
    source.consume(Message().add(failed(1)).bytes());
    EXPECT_TRUE(source.scan_done());
    EXPECT_TRUE(source.scan_failed());
    EXPECT_EQ(source.scan_failure(), agent::ScanFailure::kNoMemory);
    EXPECT_FALSE(source.reach_complete());
    agent::ReachRecord reach{};
    reach.header.kind = agent::RecordKind::kReach;
    reach.blocks = 2;
    EXPECT_THROW(source.consume(Message().add(reach, {0b01}).bytes()), StreamError);
    EXPECT_THROW(source.consume(Message().add(failed(2)).bytes()), StreamError);
    const Recording rec = source.finish();
    EXPECT_EQ(rec.end, RunEnd::kNoExitScan);
    EXPECT_TRUE(rec.leaked.empty());
    ASSERT_EQ(rec.unfreed.size(), 2u);
  }
  {
    AgentSource source;
    two_blocks_then_exit(source);
    EXPECT_THROW(source.consume(Message().add(failed(1)).bytes()), StreamError);  // no list sent yet
  }
  for (const std::uint16_t why : {std::uint16_t{0}, std::uint16_t{agent::kMaxScanFailure + 1}}) {
    AgentSource source;
    two_blocks_then_exit(source);
    (void)source.live_list();
    EXPECT_THROW(source.consume(Message().add(failed(why)).bytes()), StreamError) << why;
  }
}

// Records that come between the live list and the scan's answer are of threads still running as
// the program exits: a listed block they free is judged by no bit, and one they allocate is
// unjudged, while the rest of the list is judged by the answer (before, any change in the count of
// live blocks threw the whole scan away).
TEST(AgentSource, RecordsBetweenTheListAndTheAnswerLeaveTheRestJudged) {
  AgentSource source;
  two_blocks_then_exit(source);
  EXPECT_EQ(source.live_list(), (std::vector<std::uint64_t>{0x1000, 16, 0x2000, 32}));
  // A racing thread frees the first block and allocates two, one at the first block's address.
  source.consume(
      Message().add(free_of(3, 0x1000)).add(alloc(4, 0x1000, 48, 1)).add(alloc(5, 0x3000, 64, 1)).bytes());
  // The answer: neither listed block reachable.
  agent::ReachRecord reach{};
  reach.header.kind = agent::RecordKind::kReach;
  reach.blocks = 2;
  source.consume(Message().add(reach, {0b00}).bytes());
  ASSERT_TRUE(source.reach_complete());
  const Recording rec = source.finish();
  EXPECT_EQ(rec.end, RunEnd::kExitScan);
  ASSERT_EQ(rec.leaked.size(), 1u);  // the second block; not the first, freed since
  EXPECT_EQ(rec.leaked[0].size, 32u);
  EXPECT_TRUE(rec.unfreed.empty());
  std::vector<std::size_t> unjudged;
  for (const LeakedBlock& b : rec.unjudged) unjudged.push_back(b.size);
  std::sort(unjudged.begin(), unjudged.end());
  EXPECT_EQ(unjudged, (std::vector<std::size_t>{48, 64}));
}

// The sites are judged while the program scans at exit; the judgements are kept for the report
// while they are of the recording finish() gives, and dropped when a record came after them.
TEST(AgentSource, SitesJudgedAtExitAreKeptOnlyWhileNothingChangedTheRecording) {
  for (const bool late_record : {false, true}) {
    AgentSource source;
    two_blocks_then_exit(source);
    source.live_list();
    source.judge_sites_at_exit({}, 10);
    // Before the answer: a thread still inside the agent as the program exited.
    if (late_record) source.consume(Message().add(free_of(3, 0x1000)).bytes());
    const Recording rec = source.finish();
    if (late_record) {
      EXPECT_EQ(source.site_judgements(), nullptr);
      continue;
    }
    const SiteJudgements* judged = source.site_judgements();
    ASSERT_NE(judged, nullptr);
    ASSERT_EQ(judged->sites.size(), rec.sites.size());
    EXPECT_EQ(judged->all.allocations, 2u);
    EXPECT_EQ(judged->all.bytes_allocated, 48);
  }
  {
    // A program sampled by time (one sample: iteration 1) whose first own mark comes late: the
    // samples give way to the marks and the iteration is 1 again, yet the recording changed.
    AgentSource source;
    Message m;
    m.add(hello()).add(site(1, 0)).add(alloc(1, 0x1000, 16, 1)).add(fence(agent::RecordKind::kFence, 2));
    m.add(fence(agent::RecordKind::kExit, 3));
    source.consume(m.bytes());
    ASSERT_TRUE(source.exit_requested());
    source.live_list();
    source.judge_sites_at_exit({}, 10);
    source.consume(Message().add(mark(4)).bytes());
    (void)source.finish();
    EXPECT_EQ(source.site_judgements(), nullptr);
  }
}

// The agent records no block at address 0 (free(NULL) and failed allocations pass through), and
// 0 marks an empty slot of the live table: a record naming it is refused.
TEST(AgentSource, ABlockAtAddressZeroIsRefused) {
  {
    AgentSource source;
    Message m;
    m.add(hello()).add(site(1, 0)).add(alloc(1, 0x1000, 16, 1)).add(free_of(2, 0));
    EXPECT_THROW(source.consume(m.bytes()), StreamError);
  }
  {
    AgentSource source;
    Message m;
    m.add(hello()).add(site(1, 0)).add(alloc(1, 0, 16, 1));
    EXPECT_THROW(source.consume(m.bytes()), StreamError);
  }
}

// A reachability answer before tleak sent its live list answers nothing: refused (the fuzzer's
// answer to no list had been taken for one to an empty list, and the blocks judged later by bits
// past its end).
TEST(AgentSource, AReachAnswerBeforeTheLiveListIsRefused) {
  AgentSource source;
  Message m;
  m.add(hello()).add(site(1, 0)).add(alloc(1, 0x1000, 16, 1));
  agent::ReachRecord reach{};
  reach.header = {agent::RecordKind::kReach, 0, static_cast<std::uint32_t>(sizeof reach)};
  reach.blocks = 0;
  m.add(reach);
  EXPECT_THROW(source.consume(m.bytes()), StreamError);
}

// A reachability answer longer than one message goes on in pieces of its bitmap, each naming its
// place (ReachMoreRecord). A thread that still runs as the program exits may send its records
// between two pieces: they are records, taken as those before the answer are, not bitmap (they
// once went into it, and the blocks after them were judged by the wrong bits).
TEST(AgentSource, AReachAnswerInPiecesIsToldFromRecordsSentBetweenThem) {
  AgentSource source;
  Message m;
  m.add(hello()).add(site(1, 0));
  constexpr std::uint64_t kBlocks = 192;  // three bitmap words
  for (std::uint64_t i = 0; i < kBlocks; ++i) m.add(alloc(i + 1, 0x10000 + 64 * i, 16, 1));
  m.add(fence(agent::RecordKind::kExit, 1));
  source.consume(m.bytes());
  ASSERT_EQ(source.live_list().size(), 2 * kBlocks);
  EXPECT_FALSE(source.reach_continues());
  // The header and the first word: its 64 blocks reachable.
  agent::ReachRecord reach{};
  reach.header.kind = agent::RecordKind::kReach;
  reach.blocks = kBlocks;
  source.consume(Message().add(reach, {~std::uint64_t{0}}).bytes());
  EXPECT_TRUE(source.reach_continues());
  // A racing thread's allocation and free (of a block of its own): applied, not bitmap.
  source.consume(Message().add(alloc(500, 0x90000, 48, 1)).add(free_of(501, 0x90000)).bytes());
  EXPECT_TRUE(source.reach_continues());
  // A piece in the wrong place, or the answer again: refused.
  agent::ReachMoreRecord more{};
  more.header.kind = agent::RecordKind::kReachMore;
  more.offset = 16;
  EXPECT_THROW(source.consume(Message().add(more, {1}).bytes()), StreamError);
  EXPECT_THROW(source.consume(Message().add(reach, {1}).bytes()), StreamError);
  // The second word: its four lowest blocks reachable; then the third: none.
  more.offset = 8;
  source.consume(Message().add(more, {0b1111}).bytes());
  EXPECT_TRUE(source.reach_continues());
  more.offset = 16;
  source.consume(Message().add(more, {0}).bytes());
  EXPECT_FALSE(source.reach_continues());
  ASSERT_TRUE(source.reach_complete());
  const Recording rec = source.finish();
  EXPECT_EQ(rec.end, RunEnd::kExitScan);
  EXPECT_EQ(rec.unfreed.size(), 64u + 4u);
  EXPECT_EQ(rec.leaked.size(), kBlocks - 68u);
  EXPECT_EQ(rec.allocations, kBlocks + 1);
  EXPECT_EQ(rec.frees, 1u);
}

// A piece of an answer that was never begun: refused.
TEST(AgentSource, AReachPieceWithoutAnAnswerIsRefused) {
  AgentSource source;
  two_blocks_then_exit(source);
  (void)source.live_list();
  agent::ReachMoreRecord more{};
  more.header.kind = agent::RecordKind::kReachMore;
  EXPECT_THROW(source.consume(Message().add(more, {1}).bytes()), StreamError);
}

// Stacks that come once every site is given go under site 0: the source tells (a report's note
// says so), and the blocks are still counted.
TEST(AgentSource, AllocationsOfTheOverflowSiteAreCountedAndTold) {
  AgentSource source(/*max_sites=*/3);  // sites 1 and 2
  Message m;
  m.add(hello()).add(site(1, 1), {0xa1}).add(alloc(1, 0x1000, 16, 1));
  m.add(site(2, 1), {0xa2}).add(alloc(2, 0x2000, 32, 2)).add(mark(1));
  source.consume(m.bytes());
  EXPECT_FALSE(source.stacks_overflowed());
  source.consume(Message().add(site(3, 1), {0xa3}).add(alloc(3, 0x3000, 64, 3)).add(mark(2)).bytes());
  EXPECT_TRUE(source.stacks_overflowed());
  EXPECT_EQ(source.live_bytes(), 112);
  EXPECT_TRUE(source.stack(SiteId(0)).empty());
  const Recording rec = source.finish();
  EXPECT_EQ(rec.sites[0].live_bytes, 64);
}

TEST(AgentSource, StackSlotsAndThreadsOutOfRangeAreRefused) {
  const auto refused = [](Message& m) {
    AgentSource source;
    EXPECT_THROW(source.consume(m.bytes()), StreamError);
  };
  Message slot_past;
  slot_past.add(hello()).add(site(agent::kStackSlots, 1), {0x401000});
  refused(slot_past);
  Message thread_past;
  thread_past.add(hello()).add(tleak::testing::site_keyed(1, 1, 1, agent::kMaxThreadBuffers), {0x401000});
  refused(thread_past);
  Message never_named;  // an allocation from a slot no site record named
  never_named.add(hello()).add(site(1, 1), {0x401000}).add(alloc(1, 0x1000, 8, 2));
  refused(never_named);
  Message other_thread;  // thread 0 named slot 1; thread 1 did not
  other_thread.add(hello()).add(site(1, 1), {0x401000}).add(alloc(1, 0x1000, 8, 1, 1));
  refused(other_thread);
  Message alloc_slot_past;
  alloc_slot_past.add(hello()).add(site(1, 1), {0x401000}).add(alloc(1, 0x1000, 8, agent::kStackSlots));
  refused(alloc_slot_past);
}

TEST(AgentSource, MalformedRecordsAreRefused) {
  {
    AgentSource source;
    auto h = hello();
    h.magic = 1;
    EXPECT_THROW(source.consume(Message().add(h).bytes()), StreamError);
  }
  {
    AgentSource source;
    auto h = hello();
    h.version = agent::kProtocolVersion + 1;
    EXPECT_THROW(source.consume(Message().add(h).bytes()), StreamError);
  }
  {
    AgentSource source;
    auto h = hello();
    h.python_main = agent::PythonMainCode::kStdin;
    source.consume(Message().add(h).bytes());
    EXPECT_EQ(source.python_main_code(), agent::PythonMainCode::kStdin);
    h.python_main = static_cast<agent::PythonMainCode>(3);
    EXPECT_THROW(source.consume(Message().add(h).bytes()), StreamError);
  }
  {
    // The allocation functions the executable defines itself: a bit each, none past the last.
    AgentSource source;
    auto h = hello();
    h.shadowed = agent::kShadowedMalloc | 1u << (agent::kInterposedFunctionCount - 1);
    source.consume(Message().add(h).bytes());
    EXPECT_EQ(source.shadowed_functions(), h.shadowed);
    h.shadowed = 1u << agent::kInterposedFunctionCount;
    EXPECT_THROW(source.consume(Message().add(h).bytes()), StreamError);
  }
  {
    // A Python program's script before the executable's path; one said to run past its record is refused.
    AgentSource source;
    auto h = hello();
    std::vector<std::uint64_t> tail = tleak::testing::text_words("train.py");
    h.python_target_bytes = static_cast<std::uint32_t>(tail.size() * 8);
    const std::vector<std::uint64_t> executable = tleak::testing::text_words("/usr/bin/python3.11");
    tail.insert(tail.end(), executable.begin(), executable.end());
    source.consume(Message().add(h, tail).bytes());
    EXPECT_EQ(source.python_target(), "train.py");
    EXPECT_EQ(source.executable(), "/usr/bin/python3.11");
    h.python_target_bytes = static_cast<std::uint32_t>(tail.size() * 8 + 8);
    EXPECT_THROW(source.consume(Message().add(h, tail).bytes()), StreamError);
  }
  {
    AgentSource source;
    Message m;
    m.add(hello());
    const std::span<const unsigned char> whole = m.bytes();
    // A hello cut inside the header of the record after it.
    std::vector<unsigned char> bytes(whole.size() + 4, 0);
    std::memcpy(bytes.data(), whole.data(), whole.size());
    EXPECT_THROW(source.consume(bytes), StreamError);
  }
  {
    AgentSource source;
    auto s = site(1, agent::kMaxFrames + 1);
    EXPECT_THROW(source.consume(Message().add(hello()).add(s).bytes()), StreamError);
  }
  {
    AgentSource source;
    Message m;
    m.add(hello()).add(alloc(1, 0x1000, 8, 1));
    std::vector<unsigned char> bytes(m.bytes().begin(), m.bytes().end());
    bytes[sizeof(agent::HelloRecord) + 4] = 0xff;  // the alloc record's size, past the message
    EXPECT_THROW(source.consume(bytes), StreamError);
  }
  for (const bool free_last : {false, true}) {
    // The message ends inside its last allocation or free record.
    AgentSource source;
    Message m;
    m.add(hello()).add(site(1, 1), {0x401000}).add(alloc(1, 0x1000, 8, 1));
    if (free_last) m.add(free_of(2, 0x1000));
    const std::span<const unsigned char> whole = m.bytes();
    EXPECT_THROW(source.consume(whole.first(whole.size() - 8)), StreamError) << (free_last ? "free" : "allocation");
  }
}

TEST(AgentSource, AllocationAndFreeRecordsLongerThanTheirKindAreReadByTheirFields) {
  // Decoded apart from the usual size (a later agent's records may carry more): the same blocks.
  AgentSource source;
  Message m;
  m.add(hello()).add(site(1, 1), {0x401000});
  m.add(alloc(10, 0x1000, 100, 1), {0xdead}).add(alloc(11, 0x2000, 30, 1));
  m.add(free_of(12, 0x1000), {0xbeef, 0}).add(mark(1));
  source.consume(m.bytes());
  EXPECT_EQ(source.live_bytes(), 30);
  const Recording rec = source.finish();
  ASSERT_GE(rec.sites.size(), 2u);
  EXPECT_EQ(rec.sites[1].allocations, 2u);
  EXPECT_EQ(rec.sites[1].frees, 1u);
  EXPECT_EQ(rec.sites[1].peak_live_bytes, 130);
}

}  // namespace
}  // namespace tleak::diagnosis
