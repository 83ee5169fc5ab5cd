// Where a thread's recent allocations' records lie in the message its buffer is writing. Most
// blocks die young: a free of one whose allocation record is still in that message names the
// record (RecordKind::kFreeInMessage), and tleak applies both in their order without its table of
// live blocks (two of its operations of every short-lived block, a quarter of the reader's time on
// malloc-heavy's stream). Only the buffer's thread uses it, under the buffer's lock.
#pragma once

#include <cstdint>

namespace tleak::agent {

class RecentAllocations {
 public:
  // Notes an allocation record just written in the message, at `address`.
  void note_allocation(std::uint64_t address) {
    table_[index(address)] = {address, events_++, message_};
  }

  // For a free record just written in the message, of `address`: how many allocation and free
  // records back its block's allocation record is, or 0 (not in this message, or too far back to
  // say, or forgotten for another allocation in its place of the table). Counts the free record.
  std::uint16_t note_free(std::uint64_t address) {
    Entry& e = table_[index(address)];
    const std::uint32_t back = events_++ - e.event;
    if (e.address != address || e.message != message_ || back > 0xffff) return 0;
    e.address = 0;
    return static_cast<std::uint16_t>(back);
  }

  // The buffer begins another message (it sent one, or a new thread took it): no record before
  // is named again.
  void new_message() {
    events_ = 0;
    ++message_;
  }

 private:
  static constexpr int kBits = 10;  // 1,024 allocations, 16 KiB
  struct Entry {
    std::uint64_t address = 0;  // zero: empty
    std::uint32_t event = 0;    // its place among the message's allocation and free records
    std::uint32_t message = 0;
  };
  static std::uint32_t index(std::uint64_t address) {
    return static_cast<std::uint32_t>((address * 0x9e3779b97f4a7c15ull) >> (64 - kBits));
  }

  Entry table_[1u << kBits];
  std::uint32_t events_ = 0;  // allocation and free records in the message being written
  std::uint32_t message_ = 0;
};

}  // namespace tleak::agent
