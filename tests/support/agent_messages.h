// Hand-built messages of the agent's stream (tleak/agent/protocol.h), for the tests of tleak's
// decoder and the seeds of its fuzzer.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "tleak/agent/protocol.h"
#include "tleak/agent/stack_hash.h"

namespace tleak::testing {

namespace agent = tleak::agent;

// Appends `record` (its header's size set here) and `tail` words to a message.
class Message {
 public:
  template <class Record>
  Message& add(Record record, const std::vector<std::uint64_t>& tail = {}) {
    record.header.size = static_cast<std::uint32_t>(sizeof record + tail.size() * 8);
    const auto* head = reinterpret_cast<const unsigned char*>(&record);
    const auto* words = reinterpret_cast<const unsigned char*>(tail.data());
    bytes_.insert(bytes_.end(), head, head + sizeof record);
    bytes_.insert(bytes_.end(), words, words + tail.size() * 8);
    return *this;
  }
  std::span<const unsigned char> bytes() const { return bytes_; }
  // Another message's records, after these.
  Message& add_bytes(std::span<const unsigned char> more) {
    bytes_.insert(bytes_.end(), more.begin(), more.end());
    return *this;
  }

 private:
  std::vector<unsigned char> bytes_;
};

// Text as the stream carries it: NUL-terminated, padded to whole words.
inline std::vector<std::uint64_t> text_words(const std::string& text) {
  std::vector<std::uint64_t> words((text.size() + 1 + 7) / 8, 0);
  std::memcpy(words.data(), text.c_str(), text.size() + 1);
  return words;
}

inline agent::HelloRecord hello() {
  agent::HelloRecord h{};
  h.header.kind = agent::RecordKind::kHello;
  h.magic = agent::kProtocolMagic;
  h.version = agent::kProtocolVersion;
  h.pid = 42;
  h.stack_depth = 2;
  return h;
}

// A stack for `thread`'s cache slot `slot`, told apart from others by `key` (the agent's hash of
// its frames; here any number, as long as equal stacks get equal ones).
inline agent::SiteRecord site_keyed(std::uint32_t slot, std::uint32_t depth, std::uint64_t key, std::uint32_t thread = 0) {
  agent::SiteRecord s{};
  s.header.kind = agent::RecordKind::kSite;
  s.thread = thread;
  s.slot = slot;
  s.key_a = key * 0x9e3779b97f4a7c15ull | 1;
  s.key_b = key;
  s.depth = depth;
  return s;
}

// A stack of its own for thread 0's slot `slot` (its key: the slot's number). Sites are numbered
// from 1 in the order their stacks first came, so slots defined 1, 2, 3... are sites 1, 2, 3...
inline agent::SiteRecord site(std::uint32_t slot, std::uint32_t depth) { return site_keyed(slot, depth, slot); }

// Like site(), with its first `prefix` and last `suffix` frames those of the thread's previous site
// record (the record's tail then holds only the depth - prefix - suffix frames in between).
inline agent::SiteRecord site_against(std::uint32_t slot, std::uint32_t depth, std::uint16_t prefix, std::uint16_t suffix) {
  agent::SiteRecord s = site(slot, depth);
  s.prefix = prefix;
  s.suffix = suffix;
  return s;
}

// An allocation from the stack `thread`'s cache slot `slot` stands for.
inline agent::AllocRecord alloc(std::uint64_t ns, std::uint64_t address, std::uint64_t size, std::uint32_t slot,
                                std::uint32_t thread = 0) {
  agent::AllocRecord a{};
  a.header.kind = agent::RecordKind::kAlloc;
  a.ns = ns;
  a.address = address;
  a.size = size;
  a.slot = slot;
  a.thread = thread;
  return a;
}

inline agent::FreeRecord free_of(std::uint64_t ns, std::uint64_t address) {
  agent::FreeRecord f{};
  f.header.kind = agent::RecordKind::kFree;
  f.ns = ns;
  f.address = address;
  return f;
}

// A fence of `kind` (kFence, kMark, kSnapshot, kExit, kFlush).
inline agent::FenceRecord fence(agent::RecordKind kind, std::uint64_t sequence, std::uint32_t name_bytes = 0) {
  agent::FenceRecord f{};
  f.header.kind = kind;
  f.sequence = sequence;
  f.name_bytes = name_bytes;
  return f;
}

inline agent::FenceRecord mark(std::uint64_t sequence) { return fence(agent::RecordKind::kMark, sequence); }

// The stack `words` for thread 0's slot `slot`, keyed as the agent keys it (tleak keys a stack it
// rewrites the same way, so a test that has it rewrite one needs the real keys).
inline Message& add_site_hashed(Message& m, std::uint32_t slot, const std::vector<std::uint64_t>& words) {
  agent::SiteRecord s = site_keyed(slot, static_cast<std::uint32_t>(words.size()), 0);
  const agent::StackHash key = agent::stack_hash(words.data(), static_cast<std::uint32_t>(words.size()));
  s.key_a = key.a;
  s.key_b = key.b;
  return m.add(s, words);
}

// The description of the agent's Python frame `id`: columns from 0, -1 where unknown.
inline Message python_frame(std::uint32_t id, const std::string& file, const std::string& function, std::int32_t line,
                            std::int32_t column = -1, std::int32_t end_column = -1) {
  agent::PythonFrameRecord p{};
  p.header.kind = agent::RecordKind::kPythonFrame;
  p.id = id;
  p.line = line;
  p.column = column;
  p.end_column = end_column;
  p.file_bytes = static_cast<std::uint32_t>(file.size() + 1);
  p.function_bytes = static_cast<std::uint32_t>(function.size() + 1);
  Message m;
  m.add(p, text_words(file + '\0' + function));
  return m;
}

}  // namespace tleak::testing
