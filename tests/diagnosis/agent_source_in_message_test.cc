// A free that names its block's allocation record in the same message (RecordKind::kFreeInMessage):
// tleak applies both in their order without its table of live blocks, and every figure must come
// out as the plain free's would.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "agent_messages.h"
#include "tleak/agent/protocol.h"
#include "tleak/diagnosis/agent_source.h"

namespace tleak::diagnosis {
namespace {

namespace agent = tleak::agent;
using tleak::testing::alloc;
using tleak::testing::fence;
using tleak::testing::free_in_message;
using tleak::testing::free_of;
using tleak::testing::hello;
using tleak::testing::mark;
using tleak::testing::Message;
using tleak::testing::site;
using tleak::testing::site_keyed;

// What a recording says, site by site and in total, for comparing two.
struct Figures {
  std::vector<std::vector<std::int64_t>> sites;  // allocations, frees, bytes, live, peak, series...
  std::int64_t peak = 0, allocations = 0, frees = 0;
  std::vector<std::int64_t> marks;
  bool operator==(const Figures&) const = default;
};

Figures figures_of(const Recording& rec) {
  Figures f;
  for (const SiteRecord& s : rec.sites) {
    std::vector<std::int64_t> row{static_cast<std::int64_t>(s.allocations),
                                  static_cast<std::int64_t>(s.frees),
                                  static_cast<std::int64_t>(s.bytes_allocated),
                                  s.live_bytes,
                                  s.live_blocks,
                                  s.peak_live_bytes};
    for (const std::int64_t v : s.series(rec.marks.size())) row.push_back(v);
    f.sites.push_back(row);
  }
  f.peak = rec.peak_live_bytes;
  f.allocations = static_cast<std::int64_t>(rec.allocations);
  f.frees = static_cast<std::int64_t>(rec.frees);
  for (const MarkSample& m : rec.marks) f.marks.push_back(m.live_bytes);
  return f;
}

TEST(AgentSourceInMessage, AFreeNamingItsAllocationEndsThatBlock) {
  AgentSource source;
  Message m;
  m.add(hello()).add(site(1, 1), {0x401000});
  m.add(alloc(10, 0x1000, 100, 1))
      .add(alloc(11, 0x2000, 30, 1))
      .add(free_in_message(12, 0x1000, 2));
  m.add(alloc(13, 0x3000, 7, 1)).add(mark(1));
  source.consume(m.bytes());
  EXPECT_EQ(source.live_bytes(), 37);
  const Recording rec = source.finish();
  ASSERT_GE(rec.sites.size(), 2u);
  EXPECT_EQ(rec.sites[1].allocations, 3u);
  EXPECT_EQ(rec.sites[1].frees, 1u);
  EXPECT_EQ(rec.sites[1].peak_live_bytes, 130);  // both blocks, before the free
  EXPECT_EQ(rec.sites[1].live_bytes, 37);
}

// Another thread's records between the allocation and its free, in time, are applied between them:
// the peak is the one the program had.
TEST(AgentSourceInMessage, AnotherThreadsRecordsInBetweenCountTowardThePeak) {
  AgentSource source;
  Message start;
  start.add(hello()).add(site_keyed(1, 0, 7, 0)).add(site_keyed(1, 0, 7, 1));
  source.consume(start.bytes());
  Message a;  // thread 0: a block from 10 to 40
  a.add(alloc(10, 0x1000, 100, 1, 0)).add(free_in_message(40, 0x1000, 1));
  Message b;  // thread 1: a block from 20 to 30, the same site
  b.add(alloc(20, 0x2000, 50, 1, 1)).add(free_in_message(30, 0x2000, 1));
  source.consume(a.bytes());
  source.consume(b.bytes());
  source.consume(Message().add(mark(1)).bytes());
  const Recording rec = source.finish();
  ASSERT_GE(rec.sites.size(), 2u);
  EXPECT_EQ(rec.sites[1].peak_live_bytes, 150);
  EXPECT_EQ(rec.peak_live_bytes, 150);
  EXPECT_EQ(rec.sites[1].live_bytes, 0);
}

// A fence inside the message between them applied the allocation already, as any: the free then
// takes the block from the table.
TEST(AgentSourceInMessage, AnAllocationAppliedBeforeItsFreeCameIsFreedFromTheTable) {
  AgentSource source;
  Message m;
  m.add(hello()).add(site(1, 1), {0x401000});
  m.add(alloc(10, 0x1000, 100, 1))
      .add(fence(agent::RecordKind::kFlush, 1))
      .add(free_in_message(12, 0x1000, 1));
  m.add(mark(2));
  source.consume(m.bytes());
  EXPECT_EQ(source.live_bytes(), 0);
  const Recording rec = source.finish();
  EXPECT_EQ(rec.sites[1].frees, 1u);
  EXPECT_EQ(rec.sites[1].live_blocks, 0);
}

// Thread 0 allocates a block; thread 1 frees it and allocates another at the same address; thread 0
// frees that one, its free naming its own allocation (it cannot know thread 1 freed that block).
// The figures are those of the program: thread 0's block ended at thread 1's free.
TEST(AgentSourceInMessage, ABlockAnotherThreadFreedEndsWhereItWasFreed) {
  const auto recorded = [](bool named) {
    AgentSource source;
    Message start;
    start.add(hello()).add(site_keyed(1, 0, 7, 0)).add(site_keyed(2, 0, 8, 1));
    source.consume(start.bytes());
    Message zero;  // thread 0: 100 bytes at 10, a free of the address at 40
    zero.add(alloc(10, 0x1000, 100, 1, 0))
        .add(named ? free_in_message(40, 0x1000, 1) : free_of(40, 0x1000));
    Message one;  // thread 1: frees thread 0's block at 20, allocates 30 bytes there at 30
    one.add(free_of(20, 0x1000)).add(alloc(30, 0x1000, 30, 2, 1));
    source.consume(zero.bytes());
    source.consume(one.bytes());
    source.consume(Message().add(mark(1)).bytes());
    return std::make_pair(source.live_bytes(), figures_of(source.finish()));
  };
  const auto [live, figures] = recorded(true);
  EXPECT_EQ(live, 0);
  ASSERT_GE(figures.sites.size(), 3u);
  EXPECT_EQ(figures.sites[1][5], 100);  // site 1's peak
  EXPECT_EQ(figures.sites[2][5], 30);
  EXPECT_EQ(figures.peak, 100);  // never both: thread 0's block was freed before the other came
  EXPECT_EQ(recorded(true), recorded(false));
}

// At the same instant as its allocation, a free is ordered first (happened_before), as a plain
// free is: the two are then applied through the table, and come out as the plain free's.
TEST(AgentSourceInMessage, AFreeAtItsAllocationsInstantIsTakenAsAPlainFree) {
  const auto recorded = [](bool named) {
    AgentSource source;
    Message m;
    m.add(hello()).add(site(1, 1), {0x401000}).add(alloc(10, 0x1000, 100, 1));
    m.add(named ? free_in_message(10, 0x1000, 1) : free_of(10, 0x1000)).add(mark(1));
    source.consume(m.bytes());
    return std::make_pair(source.live_bytes(), figures_of(source.finish()));
  };
  EXPECT_EQ(recorded(true), recorded(false));
}

TEST(AgentSourceInMessage, AFreeNamingNoAllocationOfItsBlockIsRefused) {
  const auto refused = [](Message m) {
    AgentSource source;
    source.consume(Message().add(hello()).add(site(1, 1), {0x401000}).bytes());
    EXPECT_THROW(source.consume(m.bytes()), StreamError);
  };
  refused(Message().add(alloc(10, 0x1000, 8, 1)).add(free_in_message(11, 0x1000, 0)));  // itself
  refused(Message()
              .add(alloc(10, 0x1000, 8, 1))
              .add(free_in_message(11, 0x1000, 2)));  // before the message
  refused(
      Message().add(alloc(10, 0x1000, 8, 1)).add(free_in_message(11, 0x2000, 1)));  // another block
  refused(Message().add(free_of(9, 0x5000)).add(free_in_message(11, 0x5000, 1)));   // a free
  refused(Message()
              .add(alloc(10, 0x1000, 8, 1))
              .add(free_in_message(11, 0x1000, 1))
              .add(free_in_message(12, 0x1000, 2)));                               // freed twice
  refused(Message().add(alloc(10, 0x1000, 8, 1)).add(free_in_message(11, 0, 1)));  // address 0
}

// Random streams of three threads, each free written both ways (naming its allocation when that is
// in the same message, as the agent does, and as a plain free), with fences, marks and addresses
// handed from thread to thread: the two recordings are the same, figure for figure.
TEST(AgentSourceInMessage, EveryFigureIsThePlainFreesFigure) {
  std::mt19937_64 random(20261127);
  for (int trial = 0; trial < 40; ++trial) {
    constexpr std::uint32_t kThreads = 3;
    struct Block {
      std::uint64_t address;
      std::uint32_t thread;
    };
    std::vector<Block> live;
    std::uint64_t next_address = 0x10000;
    std::uint64_t fences = 0;
    // Per thread: its open message both ways, its events in it, and where each of its blocks'
    // allocation record is in it.
    struct Open {
      Message named, plain;
      std::uint32_t events = 0;
      std::map<std::uint64_t, std::uint32_t> allocated_at;
    };
    std::vector<Open> open(kThreads);
    std::vector<Message> named_stream, plain_stream;
    Message start;
    start.add(hello());
    for (std::uint32_t t = 0; t < kThreads; ++t) {
      for (std::uint32_t s = 0; s < 3; ++s) start.add(site_keyed(s, 0, 100 + s, t));
    }
    named_stream.push_back(start);
    plain_stream.push_back(start);
    const auto send = [&](std::uint32_t t) {
      named_stream.push_back(open[t].named);
      plain_stream.push_back(open[t].plain);
      open[t] = Open();
    };
    // One clock, as the processor's: the threads' records interleave in time across their
    // messages, and a block is freed after it was allocated, whichever thread frees it.
    std::uint64_t clock = 1000;
    for (int step = 0; step < 400; ++step) {
      const auto t = static_cast<std::uint32_t>(random() % kThreads);
      clock += 1 + random() % 20;
      const std::uint64_t ns = clock;
      Open& o = open[t];
      // Frees of another thread's block, and addresses freed and handed out again, included.
      if (!live.empty() && random() % 2 == 0) {
        const std::size_t k = random() % live.size();
        const Block block = live[k];
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
        // As the agent: the thread names the last allocation of this address in its message,
        // even when another thread freed that block and this is another one since.
        const auto at = o.allocated_at.find(block.address);
        if (at != o.allocated_at.end()) {
          o.named.add(free_in_message(ns, block.address,
                                      static_cast<std::uint16_t>(o.events - at->second)));
          o.allocated_at.erase(at);
        } else {
          o.named.add(free_of(ns, block.address));
        }
        o.plain.add(free_of(ns, block.address));
        ++o.events;
        if (random() % 4 == 0) {  // the address comes back soon
          live.push_back({block.address, t});
          o.allocated_at[block.address] = o.events++;
          const auto a = alloc(ns + 1, block.address, 1 + random() % 500,
                               static_cast<std::uint32_t>(random() % 3), t);
          o.named.add(a);
          o.plain.add(a);
          clock += 1;
        }
      } else {
        const std::uint64_t address = next_address;
        next_address += 0x100;
        live.push_back({address, t});
        o.allocated_at[address] = o.events++;
        const auto a =
            alloc(ns, address, 1 + random() % 500, static_cast<std::uint32_t>(random() % 3), t);
        o.named.add(a);
        o.plain.add(a);
      }
      if (random() % 16 == 0) send(t);
      if (random() % 40 == 0) {
        // A fence: every thread's buffer first, then the fence (a mark or a flush).
        for (std::uint32_t u = 0; u < kThreads; ++u) send(u);
        Message f;
        if (random() % 2 == 0) {
          f.add(mark(++fences));
        } else {
          f.add(fence(agent::RecordKind::kFlush, ++fences));
        }
        named_stream.push_back(f);
        plain_stream.push_back(f);
      }
    }
    for (std::uint32_t u = 0; u < kThreads; ++u) send(u);
    Message last;
    last.add(mark(++fences));
    named_stream.push_back(last);
    plain_stream.push_back(last);

    AgentSource named, plain;
    for (const Message& m : named_stream) named.consume(m.bytes());
    for (const Message& m : plain_stream) plain.consume(m.bytes());
    EXPECT_EQ(named.live_bytes(), plain.live_bytes()) << "trial " << trial;
    EXPECT_EQ(figures_of(named.finish()), figures_of(plain.finish())) << "trial " << trial;
  }
}

}  // namespace
}  // namespace tleak::diagnosis
