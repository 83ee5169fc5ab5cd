// Allocator statistics, declared once. The X-macros generate the struct and the by-name visit
// that reports use, so adding a figure is one line here.
#pragma once

#include <cstdint>
#include <string_view>

namespace tleak {

// A level that rises and falls; its peak is kept.
struct Gauge {
  std::int64_t current = 0;
  std::int64_t peak = 0;
  void add(std::int64_t delta) {
    current += delta;
    if (current > peak) peak = current;
  }
};

#define TLEAK_ALLOCATOR_GAUGES(X)                                             \
  X(bytes_in_use, "bytes of blocks handed out and not freed (after rounding)") \
  X(blocks_in_use, "blocks handed out and not freed")                          \
  X(bytes_reserved, "bytes the allocator holds from its backing store")

#define TLEAK_ALLOCATOR_COUNTERS(X)                  \
  X(allocate_calls, "successful allocate() calls") \
  X(deallocate_calls, "successful deallocate() calls")

struct AllocatorStats {
#define TLEAK_DECLARE_GAUGE(name, doc) Gauge name;
#define TLEAK_DECLARE_COUNTER(name, doc) std::uint64_t name = 0;
  TLEAK_ALLOCATOR_GAUGES(TLEAK_DECLARE_GAUGE)
  TLEAK_ALLOCATOR_COUNTERS(TLEAK_DECLARE_COUNTER)
#undef TLEAK_DECLARE_GAUGE
#undef TLEAK_DECLARE_COUNTER
};

// Calls visit(name, value) for every figure: gauges as "name" and "peak_name", then counters.
template <class Visitor>
void for_each_stat(const AllocatorStats& stats, Visitor&& visit) {
#define TLEAK_VISIT_GAUGE(name, doc)                          \
  visit(std::string_view(#name), stats.name.current);         \
  visit(std::string_view("peak_" #name), stats.name.peak);
#define TLEAK_VISIT_COUNTER(name, doc) \
  visit(std::string_view(#name), static_cast<std::int64_t>(stats.name));
  TLEAK_ALLOCATOR_GAUGES(TLEAK_VISIT_GAUGE)
  TLEAK_ALLOCATOR_COUNTERS(TLEAK_VISIT_COUNTER)
#undef TLEAK_VISIT_GAUGE
#undef TLEAK_VISIT_COUNTER
}

}  // namespace tleak
