// The agent's side of the message slots (tleak/agent/protocol.h, MessageSlots): thread buffers
// write their records straight into a slot of memory shared with the parent, and a send is a
// SlotRecord on the socket instead of the records themselves.
#pragma once

#include <cstdint>

#include "tleak/agent/protocol.h"

namespace tleak::agent {

// Maps the slots behind `fd` (the parent's memfd). Slots an earlier image of this process was
// filling when it exec'd are free again: their records died with that image, and no other process
// fills slots (only the recorded one records). False, and no slots, if `fd` is not such a file.
bool message_slots_open(int fd);
// The same through tleak's own descriptor (`path`: /proc/PID/fd/N, or null), for a process whose
// parent closed the one it would have inherited.
bool message_slots_open_at(const char* path);
// A free slot, now the caller's to fill (its memory: message_slot_memory), or -1 if none is free
// (or there are no slots).
int message_slot_take();
unsigned char* message_slot_memory(int slot);
// Where the slot's filler keeps up its count of whole records' bytes (MessageSlots::filled).
std::uint32_t* message_slot_fill(int slot);
// Marks the slot sent (the parent frees it once read) and returns the record that names its first
// `bytes`, for the caller to send where the message would have gone.
SlotRecord message_slot_sent(int slot, std::uint32_t bytes);
// A slot taken and not written, free again.
void message_slot_give_back(int slot);
// In a forked child: the slots are the parent's; the child never takes one.
void message_slots_forget();

}  // namespace tleak::agent
