// The parent's side of the agent's stream, fed hand-built messages: records put back in time
// order, sites and their stacks kept, and malformed input refused with StreamError.
#include "tleak/diagnosis/agent_source.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "agent_messages.h"
#include "tleak/agent/protocol.h"

namespace tleak::diagnosis {
namespace {

namespace agent = tleak::agent;
using tleak::testing::alloc;
using tleak::testing::free_of;
using tleak::testing::hello;
using tleak::testing::mark;
using tleak::testing::Message;
using tleak::testing::site;

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
