// Hand-built messages of the agent's stream (tleak/agent/protocol.h), for the tests of tleak's
// decoder and the seeds of its fuzzer.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "tleak/agent/protocol.h"

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

inline agent::SiteRecord site(std::uint32_t id, std::uint32_t depth) {
  agent::SiteRecord s{};
  s.header.kind = agent::RecordKind::kSite;
  s.site = id;
  s.depth = depth;
  return s;
}

// A site whose first `prefix` and last `suffix` frames are those of site `base` (the record's
// tail then holds only the depth - prefix - suffix frames in between).
inline agent::SiteRecord site_against(std::uint32_t id, std::uint32_t depth, std::uint32_t base, std::uint16_t prefix,
                                      std::uint16_t suffix) {
  agent::SiteRecord s = site(id, depth);
  s.base = base;
  s.prefix = prefix;
  s.suffix = suffix;
  return s;
}

inline agent::AllocRecord alloc(std::uint64_t ns, std::uint64_t address, std::uint64_t size, std::uint32_t site_id) {
  agent::AllocRecord a{};
  a.header.kind = agent::RecordKind::kAlloc;
  a.ns = ns;
  a.address = address;
  a.size = size;
  a.site = site_id;
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

}  // namespace tleak::testing
