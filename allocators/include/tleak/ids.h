// Strong index types: a SiteId cannot be passed where a BlockId is expected.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>

namespace tleak {

template <class Tag, class Rep>
class StrongId {
 public:
  using rep_type = Rep;
  constexpr StrongId() = default;
  constexpr explicit StrongId(Rep value) : value_(value) {}
  constexpr Rep value() const { return value_; }
  constexpr auto operator<=>(const StrongId&) const = default;

 private:
  Rep value_{};
};

// An interned allocation stack. Dense, starting at 0, so it can index vectors.
using SiteId = StrongId<struct SiteIdTag, std::uint32_t>;
// One allocation over the tracker's lifetime; never reused, even when the address is.
using BlockId = StrongId<struct BlockIdTag, std::uint64_t>;
// An allocator of a run (host pool, device arena, the program's malloc), dense from 0: events
// name it by id, so a recorded stream can be replayed without the Allocator object.
using AllocatorId = StrongId<struct AllocatorIdTag, std::uint16_t>;

}  // namespace tleak

template <class Tag, class Rep>
struct std::hash<tleak::StrongId<Tag, Rep>> {
  std::size_t operator()(tleak::StrongId<Tag, Rep> id) const noexcept {
    return std::hash<Rep>{}(id.value());
  }
};
