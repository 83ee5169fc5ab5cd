// What tleak's reader spends on each record of a malloc-heavy program's stream, apart from the
// program and the machine's scheduling: AgentSource fed, from memory, the messages that
// bench/programs/malloc_heavy.c's threads would send (each thread a ring of 64 live blocks, an
// allocate/free pair per round from one of four stacks, 64 KiB messages from one thread buffer at
// a time, a flush every 65,536 records as tleak asks for one). With two threads their rounds
// interleave in time, and their buffers arrive in turn, as under `tleak run`: each thread's round
// in turn (/2/0), or, as real threads' times fall, at a random time within the round (/2/1), so
// that which thread's record comes next in time is a coin toss (measured 2026-12-07: 62 M records/s
// against 78 M in turn, and 90 M for one thread).
// Run: build/release/bench/agent_source_benchmark
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "agent_messages.h"
#include "tleak/diagnosis/agent_source.h"

namespace {

namespace agent = tleak::agent;
using tleak::testing::Message;

constexpr std::size_t kMessageBytes = 64 * 1024;
constexpr std::size_t kRecordsPerFlush = std::size_t{1} << 16;
constexpr std::uint32_t kStacks = 4;

// The stream of `threads` threads making `rounds` pairs each, as the messages tleak would read;
// `random_times`: each thread's pair at a random time of its round instead of in turn.
std::vector<Message> malloc_heavy_stream(std::uint32_t threads, std::uint64_t rounds, bool random_times) {
  std::mt19937_64 random(7);
  std::vector<Message> messages;
  Message head;
  head.add(tleak::testing::hello());
  for (std::uint32_t t = 0; t < threads; ++t) {
    for (std::uint32_t s = 0; s < kStacks; ++s) {
      head.add(tleak::testing::site_keyed(s, 2, s + 1, t), {0x401000 + s, 0x402000});
    }
  }
  messages.push_back(std::move(head));
  std::vector<Message> open(threads);
  std::uint64_t records = 0, flushes = 0;
  const auto close = [&](std::uint32_t t) {
    messages.push_back(std::move(open[t]));
    open[t] = Message();
  };
  // A round is one step of every thread (their times interleave); a thread's message leaves when
  // full, and a flush when the records since the last reach kRecordsPerFlush.
  for (std::uint64_t i = 0; i < rounds; ++i) {
    for (std::uint32_t t = 0; t < threads; ++t) {
      const std::uint64_t base = 0x7f0000000000ull + (std::uint64_t{t} << 32);
      // A round is 20 ns a thread; a thread's allocation comes 10 ns after its free, still within
      // the round (its next free must come after it: a thread's records are in time order).
      const std::uint64_t ns = random_times ? i * threads * 20 + random() % (threads * 20 - 10) : (i * threads + t) * 20;
      if (i >= 64) open[t].add(tleak::testing::free_of(ns, base + ((i - 64) % 128) * 8192));
      open[t].add(tleak::testing::alloc(ns + 10, base + (i % 128) * 8192, 16 + (i * 2654435761u) % 4080,
                                        static_cast<std::uint32_t>(i % kStacks), t));
      records += i >= 64 ? 2 : 1;
      if (open[t].bytes().size() + 64 > kMessageBytes) close(t);
    }
    if (records / kRecordsPerFlush > flushes) {
      for (std::uint32_t t = 0; t < threads; ++t) close(t);
      Message flush;
      flush.add(tleak::testing::fence(agent::RecordKind::kFlush, ++flushes));
      messages.push_back(std::move(flush));
    }
  }
  for (std::uint32_t t = 0; t < threads; ++t) close(t);
  Message last;
  last.add(tleak::testing::fence(agent::RecordKind::kFence, ++flushes));
  messages.push_back(std::move(last));
  return messages;
}

void BM_MallocHeavyStream(benchmark::State& state) {
  const auto threads = static_cast<std::uint32_t>(state.range(0));
  const std::uint64_t rounds = 1'000'000;
  const std::vector<Message> messages = malloc_heavy_stream(threads, rounds, state.range(1) != 0);
  // Each message is read from one buffer it was just copied to, in the cache as a message the
  // program's thread has just written would be (read from memory instead, the stream of 64 MB
  // would time the memory).
  std::vector<unsigned char> slot(kMessageBytes);
  for (auto _ : state) {
    tleak::diagnosis::AgentSource source;
    for (const Message& m : messages) {
      std::copy(m.bytes().begin(), m.bytes().end(), slot.begin());
      source.consume(std::span<const unsigned char>(slot.data(), m.bytes().size()));
    }
    benchmark::DoNotOptimize(source.live_bytes());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * threads * rounds * 2));
}
BENCHMARK(BM_MallocHeavyStream)->Args({1, 0})->Args({2, 0})->Args({2, 1})->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
