// The parent's side of the message slots (tleak/agent/protocol.h, MessageSlots): the memory file
// the agent's thread buffers write their records into, and the reading of the slot a SlotRecord
// names, as the message it stands for.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "tleak/agent/protocol.h"

namespace tleak::diagnosis {

class MessageSlotArea {
 public:
  // A memfd of agent::MessageSlots, all free. Without one (memfd_create or mmap failed) fd() is -1
  // and the agent sends every message through the socket.
  MessageSlotArea();
  ~MessageSlotArea();
  MessageSlotArea(const MessageSlotArea&) = delete;
  MessageSlotArea& operator=(const MessageSlotArea&) = delete;

  int fd() const { return fd_; }

  // A message of the stream that names a slot: the slot's records, which stay the parent's to
  // read until release(slot). std::nullopt for any other message. Throws StreamError for a slot
  // record that names no slot the agent sent.
  struct Named {
    std::span<const unsigned char> records;
    std::uint32_t slot;
  };
  std::optional<Named> named_by(std::span<const unsigned char> message) const;
  // The slot read: the agent may fill it again.
  void release(std::uint32_t slot);
  // What a process that ended without sending left in the slots (only once no process writes in
  // them): those it was filling, each up to its last whole record (MessageSlots::filled). (Not a
  // slot marked sent whose record never went out, a window of two instructions: an image that
  // exec'd could leave one too, and its records are not the new image's.) Throws StreamError for a
  // count past a slot's end.
  std::vector<std::span<const unsigned char>> unsent() const;

 private:
  int fd_ = -1;
  agent::MessageSlots* slots_ = nullptr;
};

}  // namespace tleak::diagnosis
