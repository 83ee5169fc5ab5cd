#include "message_slot_area.h"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "tleak/diagnosis/agent_source.h"  // StreamError

namespace tleak::diagnosis {

MessageSlotArea::MessageSlotArea() {
  fd_ = static_cast<int>(syscall(SYS_memfd_create, "tleak-slots", MFD_CLOEXEC));
  if (fd_ < 0) return;
  void* memory = ftruncate(fd_, sizeof(agent::MessageSlots)) == 0
                     ? mmap(nullptr, sizeof(agent::MessageSlots), PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0)
                     : MAP_FAILED;
  if (memory == MAP_FAILED) {
    close(fd_);
    fd_ = -1;
    return;
  }
  slots_ = static_cast<agent::MessageSlots*>(memory);
  slots_->slots = agent::kMessageSlots;
  slots_->slot_bytes = agent::kMaxMessageBytes;
  // Last: the agent takes the file for slots only once it carries the magic.
  __atomic_store_n(&slots_->magic, std::uint64_t{agent::kProtocolMagic}, __ATOMIC_RELEASE);
}

MessageSlotArea::~MessageSlotArea() {
  if (slots_ != nullptr) munmap(slots_, sizeof(agent::MessageSlots));
  if (fd_ >= 0) close(fd_);
}

std::optional<MessageSlotArea::Named> MessageSlotArea::named_by(std::span<const unsigned char> message) const {
  if (message.size() != sizeof(agent::SlotRecord)) return std::nullopt;
  agent::SlotRecord record;
  std::memcpy(&record, message.data(), sizeof record);
  if (record.header.kind != agent::RecordKind::kSlot) return std::nullopt;
  if (slots_ == nullptr || record.slot >= agent::kMessageSlots || record.bytes > agent::kMaxMessageBytes) {
    throw StreamError("slot record naming no slot (" + std::to_string(record.slot) + ", " +
                      std::to_string(record.bytes) + " bytes)");
  }
  // Acquire: the agent's records are in the slot before it marked the slot sent.
  if (__atomic_load_n(&slots_->state[record.slot], __ATOMIC_ACQUIRE) != agent::kSlotSent) {
    throw StreamError("slot record naming slot " + std::to_string(record.slot) + ", which was not sent");
  }
  return Named{{slots_->slot[record.slot], record.bytes}, record.slot};
}

void MessageSlotArea::release(std::uint32_t slot) {
  // Release: this side's reading of the slot is over before the agent can take it again.
  __atomic_store_n(&slots_->state[slot], std::uint32_t{agent::kSlotFree}, __ATOMIC_RELEASE);
}

std::vector<std::span<const unsigned char>> MessageSlotArea::unsent() const {
  std::vector<std::span<const unsigned char>> out;
  if (slots_ == nullptr) return out;
  // An image that exec'd left none filling: the new one freed them as it started.
  for (std::uint32_t i = 0; i < agent::kMessageSlots; ++i) {
    if (__atomic_load_n(&slots_->state[i], __ATOMIC_ACQUIRE) != agent::kSlotFilling) continue;
    const std::uint32_t bytes = __atomic_load_n(&slots_->filled[i].bytes, __ATOMIC_RELAXED);
    if (bytes > agent::kMaxMessageBytes) {
      throw StreamError("slot " + std::to_string(i) + " filled past its end (" + std::to_string(bytes) + " bytes)");
    }
    if (bytes > 0) out.emplace_back(slots_->slot[i], bytes);
  }
  return out;
}

}  // namespace tleak::diagnosis
