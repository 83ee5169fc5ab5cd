#include "fast_unwind.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>

#include "agent_memory.h"
#include "frame_rules.h"
#include "step_profile.h"

namespace tleak::agent {

bool g_check_unwind = false;

namespace {

// A rule packed in one word, never 0: bit 0 set; bits 1-2 the kind; bit 3 the CFA from rbp; bit 4
// rbp saved; bits 5-15 the generation of the table it was found in; bits 16-31 rbp's offset;
// bits 32-63 the CFA's offset.
using PackedRule = std::uint64_t;
constexpr PackedRule kWritten = 1;
constexpr int kKindShift = 1;
constexpr PackedRule kCfaFromRbp = 1u << 3;
constexpr PackedRule kRbpSaved = 1u << 4;
constexpr int kGenerationShift = 5;
constexpr std::uint64_t kGenerationMask = 0x7ff;

PackedRule pack(const FrameRule& rule, std::uint64_t generation) {
  FrameRule::Kind kind = rule.kind;
  if (kind == FrameRule::Kind::kStep &&
      (rule.rbp_offset < INT16_MIN || rule.rbp_offset > INT16_MAX)) {
    kind = FrameRule::Kind::kUnsupported;
  }
  PackedRule word = kWritten | (static_cast<PackedRule>(kind) << kKindShift) |
                    ((generation & kGenerationMask) << kGenerationShift);
  if (kind != FrameRule::Kind::kStep) return word;
  if (rule.cfa_from_rbp) word |= kCfaFromRbp;
  if (rule.rbp_saved) word |= kRbpSaved;
  word |= static_cast<PackedRule>(static_cast<std::uint16_t>(rule.rbp_offset)) << 16;
  word |= static_cast<PackedRule>(static_cast<std::uint32_t>(rule.cfa_offset)) << 32;
  return word;
}

FrameRule::Kind kind_of(PackedRule word) {
  return static_cast<FrameRule::Kind>((word >> kKindShift) & 3);
}
std::int64_t cfa_offset_of(PackedRule word) { return static_cast<std::int32_t>(word >> 32); }
std::int64_t rbp_offset_of(PackedRule word) { return static_cast<std::int16_t>(word >> 16); }

// Open addressing over return addresses (the address before each, as looked up). 2^18 slots of 16
// bytes, mapped without committing: the PyTorch loop's 80,000 addresses fill under a third of it.
// Past kMaxProbes a rule is found again at each walk rather than stored.
struct Slot {
  std::atomic<std::uint64_t> pc;
  std::atomic<PackedRule> rule;
};
constexpr int kSlotBits = 18;
constexpr std::uint64_t kSlots = std::uint64_t{1} << kSlotBits;
constexpr int kMaxProbes = 32;
constexpr std::uintptr_t kMaxFrameBytes = std::uintptr_t{1} << 30;

Slot* g_slots = nullptr;
// Raised before each unload: a rule stored under an older generation is found again.
std::atomic<std::uint64_t> g_generation{0};

std::uint64_t hash_of(std::uintptr_t pc) { return pc * 0x9E3779B97F4A7C15ull; }
std::uint64_t slot_of(std::uintptr_t pc) { return hash_of(pc) >> (64 - kSlotBits); }

// A slot's key is claimed first and its rule written after; a reader that finds the key without a
// rule (or with another generation's) finds the rule itself.
PackedRule lookup(std::uintptr_t pc, std::uint64_t generation) {
  std::uint64_t i = slot_of(pc);
  for (int probe = 0; probe < kMaxProbes; ++probe, i = (i + 1) & (kSlots - 1)) {
    const std::uint64_t key = g_slots[i].pc.load(std::memory_order_acquire);
    if (key == pc) {
      const PackedRule rule = g_slots[i].rule.load(std::memory_order_acquire);
      return ((rule >> kGenerationShift) & kGenerationMask) == (generation & kGenerationMask) ? rule
                                                                                              : 0;
    }
    if (key == 0) return 0;
  }
  return 0;
}

void store(std::uintptr_t pc, PackedRule rule) {
  std::uint64_t i = slot_of(pc);
  for (int probe = 0; probe < kMaxProbes; ++probe, i = (i + 1) & (kSlots - 1)) {
    std::uint64_t key = g_slots[i].pc.load(std::memory_order_acquire);
    if (key == 0 && g_slots[i].pc.compare_exchange_strong(key, pc, std::memory_order_acq_rel))
      key = pc;
    if (key == pc) {
      g_slots[i].rule.store(rule, std::memory_order_release);
      return;
    }
  }
}

[[gnu::noinline]] PackedRule find_and_store(std::uintptr_t pc, std::uint64_t generation) {
  const PackedRule rule = pack(find_frame_rule(pc, generation), generation);
  store(pc, rule);
  return rule;
}

std::atomic<std::uint64_t> g_checked{0};
std::atomic<std::uint64_t> g_fell_back{0};
std::atomic<std::uint64_t> g_differed{0};

}  // namespace

void fast_unwind_init() {
  if (g_slots == nullptr)
    g_slots = static_cast<Slot*>(map_pages(kSlots * sizeof(Slot), /*reserve_only=*/true));
}

void fast_unwind_forget_rules() {
  const std::uint64_t generation = g_generation.fetch_add(1, std::memory_order_acq_rel) + 1;
  // Every 2048 unloads a generation's tag comes round again: the table starts over.
  if ((generation & kGenerationMask) == 0 && g_slots != nullptr) {
    for (std::uint64_t i = 0; i < kSlots; ++i) {
      if (g_slots[i].pc.load(std::memory_order_relaxed) == 0) continue;
      g_slots[i].rule.store(0, std::memory_order_relaxed);
    }
  }
}

void check_unwind(void* const* ours, int our_count, void* const* theirs, int their_count) {
  g_checked.fetch_add(1, std::memory_order_relaxed);
  if (our_count < 0) {
    g_fell_back.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // The first address is each walk's own call in the interposed function: never part of a site.
  bool same = our_count == their_count;
  for (int i = 1; same && i < our_count; ++i) same = ours[i] == theirs[i];
  if (!same) g_differed.fetch_add(1, std::memory_order_relaxed);
}

void report_unwind_check() {
  if (!g_check_unwind) return;
  char line[160];
  const int n =
      std::snprintf(line, sizeof line,
                    "tleak agent: unwind check: %llu stacks, %llu by libunwind, %llu differed\n",
                    static_cast<unsigned long long>(g_checked.load()),
                    static_cast<unsigned long long>(g_fell_back.load()),
                    static_cast<unsigned long long>(g_differed.load()));
  if (n > 0) {
    [[maybe_unused]] const ssize_t written =
        write(STDERR_FILENO, line, static_cast<std::size_t>(n));
  }
}

}  // namespace tleak::agent

using tleak::agent::FrameRule;

// `entry_sp` is where the call's return address is; `rbp` the caller's rbp at the call.
extern "C" __attribute__((visibility("hidden"))) int tleak_walk_stack(
    void** out, int max, tleak::agent::UnwindMemo* memo, std::uintptr_t entry_sp,
    std::uintptr_t rbp) {
  using namespace tleak::agent;
  if (g_slots == nullptr || max <= 0 || max > UnwindMemo::kFrames) return -1;
  const std::uint64_t generation = g_generation.load(std::memory_order_acquire);
  if (memo->generation != generation) memo->forget(generation);
  std::uintptr_t rip = *reinterpret_cast<const std::uintptr_t*>(entry_sp);
  std::uintptr_t rsp = entry_sp + 8;
  int depth = 0;
  out[depth++] = reinterpret_cast<void*>(rip);
  while (depth < max) {
    const std::uintptr_t pc = rip - 1;
    step_profile::count(step_profile::kFrames);
    UnwindMemo::Frame& last = memo->by_depth[depth - 1];
    PackedRule rule = last.rule;
    if (last.pc == pc) {
      step_profile::count(step_profile::kByDepth);
    } else {
      UnwindMemo::Frame& recent = memo->recent[hash_of(pc) >> (64 - UnwindMemo::kRecentBits)];
      rule = recent.rule;
      if (recent.pc == pc) {
        step_profile::count(step_profile::kRecent);
      } else {
        rule = lookup(pc, generation);
        if (__builtin_expect(rule == 0, 0)) {
          step_profile::count(step_profile::kFound);
          rule = find_and_store(pc, generation);
        } else {
          step_profile::count(step_profile::kShared);
        }
        recent = {pc, rule};
      }
      last = {pc, rule};
    }
    const FrameRule::Kind kind = kind_of(rule);
    if (kind == FrameRule::Kind::kOutermost) break;
    if (kind != FrameRule::Kind::kStep) return -1 - depth;
    const std::uintptr_t cfa = ((rule & kCfaFromRbp) != 0 ? rbp : rsp) + cfa_offset_of(rule);
    // A caller's frame is above its callee's, and within what a stack can hold: anything else
    // (unwind info that does not describe the code) is left to libunwind.
    if (cfa <= rsp || cfa - rsp > kMaxFrameBytes) return -1 - depth;
    rip = *reinterpret_cast<const std::uintptr_t*>(cfa - 8);
    if ((rule & kRbpSaved) != 0)
      rbp = *reinterpret_cast<const std::uintptr_t*>(cfa + rbp_offset_of(rule));
    rsp = cfa;
    if (rip < 0x4000) break;
    out[depth++] = reinterpret_cast<void*>(rip);
  }
  return depth;
}

// The entry: the return address's slot and rbp as the caller left them, then the walk (a jump, so
// that it returns straight to the caller).
asm(R"(
  .text
  .globl tleak_fast_backtrace
  .hidden tleak_fast_backtrace
  .type tleak_fast_backtrace, @function
  .p2align 4
tleak_fast_backtrace:
  .cfi_startproc
  movq %rsp, %rcx
  movq %rbp, %r8
  jmp tleak_walk_stack
  .cfi_endproc
  .size tleak_fast_backtrace, .-tleak_fast_backtrace
)");
