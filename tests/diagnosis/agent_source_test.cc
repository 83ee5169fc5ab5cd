// The parent's side of the agent's stream, fed hand-built messages: records put back in time
// order, sites and their stacks kept, and malformed input refused with StreamError.
#include "tleak/diagnosis/agent_source.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "tleak/agent/protocol.h"

namespace tleak::diagnosis {
namespace {

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

agent::HelloRecord hello() {
  agent::HelloRecord h{};
  h.header.kind = agent::RecordKind::kHello;
  h.magic = agent::kProtocolMagic;
  h.version = agent::kProtocolVersion;
  h.pid = 42;
  h.stack_depth = 2;
  return h;
}

agent::SiteRecord site(std::uint32_t id, std::uint32_t depth) {
  agent::SiteRecord s{};
  s.header.kind = agent::RecordKind::kSite;
  s.site = id;
  s.depth = depth;
  return s;
}

agent::AllocRecord alloc(std::uint64_t ns, std::uint64_t address, std::uint64_t size, std::uint32_t site_id) {
  agent::AllocRecord a{};
  a.header.kind = agent::RecordKind::kAlloc;
  a.ns = ns;
  a.address = address;
  a.size = size;
  a.site = site_id;
  return a;
}

agent::FreeRecord free_of(std::uint64_t ns, std::uint64_t address) {
  agent::FreeRecord f{};
  f.header.kind = agent::RecordKind::kFree;
  f.ns = ns;
  f.address = address;
  return f;
}

agent::FenceRecord mark(std::uint64_t sequence) {
  agent::FenceRecord f{};
  f.header.kind = agent::RecordKind::kMark;
  f.sequence = sequence;
  return f;
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

TEST(AgentSource, AFreeOfAnAddressItNeverSawIsIgnored) {
  AgentSource source;
  Message m;
  m.add(hello()).add(site(1, 0)).add(free_of(5, 0x9000)).add(alloc(6, 0x1000, 16, 1)).add(mark(1));
  source.consume(m.bytes());
  EXPECT_EQ(source.live_bytes(), 16);
}

TEST(AgentSource, SiteIdsBeyondTheAgentsTableAreRefused) {
  AgentSource source;
  source.consume(Message().add(hello()).bytes());
  EXPECT_THROW(source.consume(Message().add(alloc(1, 0x1000, 8, agent::kMaxSites)).bytes()), StreamError);
  EXPECT_THROW(source.consume(Message().add(site(0xffffffffu, 1), {0x401000}).bytes()), StreamError);
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
}

}  // namespace
}  // namespace tleak::diagnosis
