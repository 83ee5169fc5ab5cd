#include "message_slots.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent_memory.h"
#include "tleak_file_path.h"

namespace tleak::agent {
namespace {

MessageSlots* g_slots = nullptr;

std::uint32_t* state_of(int slot) { return &g_slots->state[slot]; }

}  // namespace

bool message_slots_open(int fd) {
  struct stat st{};
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size != static_cast<off_t>(sizeof(MessageSlots))) {
    return false;
  }
  void* memory = mmap(nullptr, sizeof(MessageSlots), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (memory == MAP_FAILED) return false;
  auto* slots = static_cast<MessageSlots*>(memory);
  if (slots->magic != kProtocolMagic || slots->slots != kMessageSlots || slots->slot_bytes != kMaxMessageBytes) {
    munmap(memory, sizeof(MessageSlots));
    return false;
  }
  // The records in them are block addresses: never roots of the exit scan.
  const auto start = reinterpret_cast<std::uintptr_t>(memory);
  add_own_region(start, start + sizeof(MessageSlots));
  for (std::uint32_t i = 0; i < kMessageSlots; ++i) {
    std::uint32_t filling = kSlotFilling;
    __atomic_compare_exchange_n(&slots->state[i], &filling, kSlotFree, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  }
  g_slots = slots;
  return true;
}

bool message_slots_open_at(const char* path) {
  const int fd = open_tleak_file(path);
  if (fd < 0) return false;
  const bool opened = message_slots_open(fd);  // the mapping outlives the descriptor
  close(fd);
  return opened;
}

int message_slot_take() {
  if (g_slots == nullptr) return -1;
  // The lowest free slot: while the parent keeps up, the same few are reused, still in the cache.
  for (std::uint32_t i = 0; i < kMessageSlots; ++i) {
    if (__atomic_load_n(state_of(static_cast<int>(i)), __ATOMIC_RELAXED) != kSlotFree) continue;
    std::uint32_t free = kSlotFree;
    // Acquire: the parent's reading of the slot is over before this side writes into it.
    if (__atomic_compare_exchange_n(state_of(static_cast<int>(i)), &free, kSlotFilling, false, __ATOMIC_ACQUIRE,
                                    __ATOMIC_RELAXED)) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

unsigned char* message_slot_memory(int slot) { return g_slots->slot[slot]; }

std::uint32_t* message_slot_fill(int slot) { return &g_slots->filled[slot].bytes; }

SlotRecord message_slot_sent(int slot, std::uint32_t bytes) {
  // Release: the records are in the slot before the parent can see it sent.
  __atomic_store_n(state_of(slot), kSlotSent, __ATOMIC_RELEASE);
  return {{RecordKind::kSlot, 0, sizeof(SlotRecord)}, static_cast<std::uint32_t>(slot), bytes};
}

void message_slot_give_back(int slot) { __atomic_store_n(state_of(slot), kSlotFree, __ATOMIC_RELEASE); }

void message_slots_forget() { g_slots = nullptr; }

}  // namespace tleak::agent
