// Writes seeds for agent_stream_fuzz into DIR: streams of every record kind as the agent sends
// them, each a small run (threads out of order, a leak, a reachable block, marks, a snapshot, the
// exit handshake, an exec).  Usage: agent_stream_seeds DIR
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "agent_messages.h"
#include "agent_stream.h"

using namespace tleak::testing;

namespace {

std::vector<std::uint8_t> bytes_of(const Message& m) { return {m.bytes().begin(), m.bytes().end()}; }

Message start(const std::string& executable) {
  Message m;
  m.add(hello(), text_words(executable));
  agent::ModuleRecord module{};
  module.header.kind = agent::RecordKind::kModule;
  module.start = 0x400000;
  module.end = 0x500000;
  module.load_bias = 0;
  const std::string path = "/usr/bin/program";
  module.path_bytes = static_cast<std::uint32_t>(path.size() + 1);
  module.build_id_bytes = 8;
  std::vector<std::uint64_t> tail = {0x0123456789abcdefull};
  for (const std::uint64_t w : text_words(path)) tail.push_back(w);
  m.add(module, tail);
  return m;
}


// A run of three iterations: a site that grows, one freed each time, one leaked and one reachable.
std::vector<std::uint8_t> whole_run(bool with_python, bool with_exec, bool answer_in_pieces = false) {
  std::vector<std::uint8_t> out;
  tleak::fuzz::append_message(out, bytes_of(start("/usr/bin/program")));
  if (with_python) {
    tleak::fuzz::append_message(out, bytes_of(python_frame(1, "train.py", "step", 14)));
  }
  Message sites;
  sites.add(site(1, 2), {0x401000, 0x402000});
  sites.add(site(2, 2), {0x401100, with_python ? (agent::kPythonFrameBit | 1) : 0x402100});
  // Written against the previous record (site 2): its own innermost frame, site 2's outermost.
  sites.add(site_against(3, 2, 0, 1), {0x401200});
  tleak::fuzz::append_message(out, bytes_of(sites));
  std::uint64_t ns = 1000, sequence = 0;
  for (std::uint64_t i = 0; i < 3; ++i) {
    Message m;
    // Two threads' records, the second's stamped earlier: tleak puts them back in order.
    m.add(alloc(ns + 20, 0x10000 + i * 0x100, 64 * (i + 1), 1));
    m.add(alloc(ns + 10, 0x20000, 32, 2));
    m.add(free_of(ns + 30, 0x20000));
    m.add(fence(agent::RecordKind::kFence, ++sequence));
    m.add(free_of(ns + 40, 0x10000 + i * 0x100));
    m.add(fence(agent::RecordKind::kFlush, ++sequence));
    m.add(alloc(ns + 50, 0x10000 + i * 0x100, 64 * (i + 1), 1));
    m.add(mark(++sequence));
    tleak::fuzz::append_message(out, bytes_of(m));
    ns += 100;
  }
  Message snapshot;
  snapshot.add(fence(agent::RecordKind::kSnapshot, ++sequence, 6), text_words("early"));
  tleak::fuzz::append_message(out, bytes_of(snapshot));
  if (with_exec) {
    tleak::fuzz::append_message(out, bytes_of(start("/usr/bin/other")));
    Message again;
    again.add(site(1, 1), {0x401000});
    again.add(alloc(ns, 0x30000, 16, 1));
    tleak::fuzz::append_message(out, bytes_of(again));
  }
  Message exit;
  exit.add(fence(agent::RecordKind::kExit, ++sequence));
  tleak::fuzz::append_message(out, bytes_of(exit));
  // The live list tleak sends holds the three kept blocks (or the one after the exec); the
  // first is reachable, the rest leaked.
  agent::ReachRecord reach{};
  reach.header.kind = agent::RecordKind::kReach;
  reach.blocks = with_exec ? 1 : 3;
  reach.roots_bytes = 4096;
  Message answer;
  if (!answer_in_pieces) {
    answer.add(reach, {1});
    tleak::fuzz::append_message(out, bytes_of(answer));
    return out;
  }
  // The header alone, a thread's records racing the exit, then the bitmap in a piece of its own.
  answer.add(reach);
  tleak::fuzz::append_message(out, bytes_of(answer));
  Message racing;
  racing.add(alloc(ns, 0x40000, 24, 1)).add(free_of(ns + 10, 0x40000));
  tleak::fuzz::append_message(out, bytes_of(racing));
  agent::ReachMoreRecord more{};
  more.header.kind = agent::RecordKind::kReachMore;
  more.offset = 0;
  Message piece;
  piece.add(more, {1});
  tleak::fuzz::append_message(out, bytes_of(piece));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: agent_stream_seeds DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  const struct {
    const char* name;
    std::vector<std::uint8_t> bytes;
  } seeds[] = {{"native", whole_run(false, false)}, {"python", whole_run(true, false)}, {"exec", whole_run(false, true)},
                {"pieces", whole_run(false, false, true)}};
  for (const auto& seed : seeds) {
    std::ofstream file(dir + "/" + seed.name, std::ios::binary);
    file.write(reinterpret_cast<const char*>(seed.bytes.data()), static_cast<std::streamsize>(seed.bytes.size()));
    if (!file) {
      std::fprintf(stderr, "agent_stream_seeds: cannot write %s/%s\n", dir.c_str(), seed.name);
      return 1;
    }
  }
  return 0;
}
