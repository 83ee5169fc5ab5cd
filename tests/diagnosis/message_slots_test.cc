// The message slots from both ends in one process: the parent's MessageSlotArea and the agent's
// message_slots.h over the same memory file, as tleak and its agent share it.
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <span>
#include <string>

#include "message_slot_area.h"
#include "message_slots.h"
#include "agent_messages.h"
#include "tleak/diagnosis/agent_source.h"

namespace tleak::diagnosis {
namespace {

namespace agent = tleak::agent;

std::span<const unsigned char> bytes_of(const agent::SlotRecord& record) {
  return {reinterpret_cast<const unsigned char*>(&record), sizeof record};
}

// Lets a test read the agent's side of the states through its own mapping.
agent::MessageSlots* map_for_test(int fd) {
  void* memory = mmap(nullptr, sizeof(agent::MessageSlots), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return memory == MAP_FAILED ? nullptr : static_cast<agent::MessageSlots*>(memory);
}

TEST(MessageSlots, ASlotFilledByTheAgentIsReadAsItsMessageAndThenFreeAgain) {
  MessageSlotArea area;
  ASSERT_GE(area.fd(), 0);
  ASSERT_TRUE(agent::message_slots_open(area.fd()));
  const int first = agent::message_slot_take();
  const int second = agent::message_slot_take();
  ASSERT_EQ(first, 0);
  ASSERT_EQ(second, 1);
  const char text[] = "records of a thread buffer";
  std::memcpy(agent::message_slot_memory(first), text, sizeof text);
  const agent::SlotRecord record = agent::message_slot_sent(first, sizeof text);
  const auto named = area.named_by(bytes_of(record));
  ASSERT_TRUE(named.has_value());
  EXPECT_EQ(named->slot, 0u);
  ASSERT_EQ(named->records.size(), sizeof text);
  EXPECT_EQ(std::memcmp(named->records.data(), text, sizeof text), 0);
  // Sent and not yet read: the agent does not take it again.
  EXPECT_EQ(agent::message_slot_take(), 2);
  area.release(named->slot);
  EXPECT_EQ(agent::message_slot_take(), 0);  // the lowest free slot, read just now
  // A message that is not a slot record is the socket's own.
  const unsigned char other[16] = {4, 0, 0, 0, 16, 0, 0, 0};
  EXPECT_FALSE(area.named_by(other).has_value());
  agent::message_slots_forget();
}

// What a process that ended without sending left: the slots it was filling, each up to the count
// its filler kept of whole records; a slot taken and not written, one free, or one marked sent (its
// record may be on the stream, or the slot an image's that exec'd) gives nothing. A count past a
// slot's end is refused.
TEST(MessageSlots, WhatAnEndedProcessLeftUnsentIsReadUpToItsWholeRecords) {
  MessageSlotArea area;
  ASSERT_TRUE(agent::message_slots_open(area.fd()));
  const int filling = agent::message_slot_take();
  const int sent = agent::message_slot_take();
  const int empty = agent::message_slot_take();
  const int given_back = agent::message_slot_take();
  ASSERT_EQ(given_back, 3);
  agent::message_slot_give_back(given_back);
  std::memcpy(agent::message_slot_memory(filling), "filling!half-written", 20);
  *agent::message_slot_fill(filling) = 8;  // the second record was not whole
  std::memcpy(agent::message_slot_memory(sent), "sent....", 8);
  *agent::message_slot_fill(sent) = 8;
  (void)agent::message_slot_sent(sent, 8);
  *agent::message_slot_fill(empty) = 0;
  const auto unsent = area.unsent();
  ASSERT_EQ(unsent.size(), 1u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(unsent[0].data()), unsent[0].size()), "filling!");
  *agent::message_slot_fill(filling) = agent::kMaxMessageBytes + 8;
  EXPECT_THROW(area.unsent(), StreamError);
  agent::message_slots_forget();
}

TEST(MessageSlots, RecordsNamingNoSentSlotAreRefused) {
  MessageSlotArea area;
  ASSERT_TRUE(agent::message_slots_open(area.fd()));
  const int slot = agent::message_slot_take();
  ASSERT_GE(slot, 0);
  // Taken but never sent: its records may be half written.
  agent::SlotRecord record{{agent::RecordKind::kSlot, 0, sizeof(agent::SlotRecord)}, static_cast<std::uint32_t>(slot), 8};
  EXPECT_THROW(area.named_by(bytes_of(record)), StreamError);
  record.slot = agent::kMessageSlots;
  EXPECT_THROW(area.named_by(bytes_of(record)), StreamError);
  record = agent::message_slot_sent(slot, 8);
  record.bytes = agent::kMaxMessageBytes + 8;
  EXPECT_THROW(area.named_by(bytes_of(record)), StreamError);
  agent::message_slots_forget();
}

// While the exit scan's answer comes in pieces, a thread still running as the program exits may
// send a slot: its SlotRecord names it as any other does, and a piece of the answer, which begins
// with its own header, is never taken for one.
TEST(MessageSlots, ASlotSentBetweenPiecesOfTheExitScansAnswerIsRead) {
  MessageSlotArea area;
  ASSERT_TRUE(agent::message_slots_open(area.fd()));
  const int slot = agent::message_slot_take();
  ASSERT_EQ(slot, 0);
  const agent::SlotRecord record = agent::message_slot_sent(slot, 8);
  AgentSource source;
  tleak::testing::Message m;
  m.add(tleak::testing::hello()).add(tleak::testing::site(1, 0));
  for (std::uint64_t i = 0; i < 192; ++i) m.add(tleak::testing::alloc(i + 1, 0x10000 + 64 * i, 16, 1));
  m.add(tleak::testing::fence(agent::RecordKind::kExit, 1));
  source.consume(m.bytes());
  ASSERT_EQ(source.live_list().size(), 2u * 192);
  agent::ReachRecord reach{};
  reach.header.kind = agent::RecordKind::kReach;
  reach.blocks = 192;
  source.consume(tleak::testing::Message().add(reach, {~std::uint64_t{0}}).bytes());
  ASSERT_TRUE(source.reach_continues());
  EXPECT_TRUE(area.named_by(bytes_of(record)).has_value());
  // The answer's last piece, its bitmap words those very record's bytes.
  agent::ReachMoreRecord more{};
  more.header.kind = agent::RecordKind::kReachMore;
  more.offset = 8;
  std::uint64_t words[2];
  std::memcpy(words, &record, sizeof words);
  tleak::testing::Message piece;
  piece.add(more, {words[0], words[1]});
  EXPECT_FALSE(area.named_by(piece.bytes()).has_value());
  source.consume(piece.bytes());
  EXPECT_TRUE(source.reach_complete());
  agent::message_slots_forget();
}

// A process that exec'd: the new image's agent opens the slots again. What the old image was
// filling died with it and is free; what it sent is still the parent's to read.
TEST(MessageSlots, ANewImageFreesTheSlotsTheOldOneWasFilling) {
  MessageSlotArea area;
  ASSERT_TRUE(agent::message_slots_open(area.fd()));
  const int filling = agent::message_slot_take();
  const int sent = agent::message_slot_take();
  const agent::SlotRecord record = agent::message_slot_sent(sent, 8);
  ASSERT_TRUE(agent::message_slots_open(area.fd()));
  agent::MessageSlots* view = map_for_test(area.fd());
  ASSERT_NE(view, nullptr);
  EXPECT_EQ(view->state[filling], agent::kSlotFree);
  EXPECT_EQ(view->state[sent], agent::kSlotSent);
  EXPECT_TRUE(area.named_by(bytes_of(record)).has_value());
  munmap(view, sizeof(agent::MessageSlots));
  agent::message_slots_forget();
}

TEST(MessageSlots, TheAgentTakesNoFileButTheParentsSlots) {
  const int fd = static_cast<int>(syscall(SYS_memfd_create, "not-slots", MFD_CLOEXEC));
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 4096), 0);
  EXPECT_FALSE(agent::message_slots_open(fd));  // another size
  ASSERT_EQ(ftruncate(fd, sizeof(agent::MessageSlots)), 0);
  EXPECT_FALSE(agent::message_slots_open(fd));  // no magic
  EXPECT_FALSE(agent::message_slots_open(-1));
  EXPECT_EQ(agent::message_slot_take(), -1);
  close(fd);
}

}  // namespace
}  // namespace tleak::diagnosis
