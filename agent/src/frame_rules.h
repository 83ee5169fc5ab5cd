// How to step from a frame to its caller's, read from the loaded object's unwind tables
// (.eh_frame_hdr's sorted index, then the FDE and CIE it points to, their call-frame instructions
// run up to the address): the caller's stack pointer (the CFA) is the frame's rsp or rbp plus an
// offset, the return address is the word just below the CFA, and rbp either keeps its value or
// was saved at an offset from the CFA. That is every frame GCC and Clang emit outside stack
// realignment, signal trampolines and hand-written code; for those the rule says "unsupported"
// and the caller lets libunwind walk the stack (fast_unwind.h).
#pragma once

#include <cstdint>

namespace tleak::agent {

struct FrameRule {
  enum class Kind : std::uint8_t {
    kStep,         // the caller's frame follows from the rule below
    kOutermost,    // the return address is undefined: the thread's first frame
    kUnsupported,  // anything else: no unwind info, or a rule this reader does not follow
  };
  Kind kind = Kind::kUnsupported;
  bool cfa_from_rbp = false;  // the CFA is rbp + cfa_offset (else rsp + cfa_offset)
  bool rbp_saved = false;     // the caller's rbp is the word at CFA + rbp_offset (else unchanged)
  std::int32_t cfa_offset = 0;
  std::int32_t rbp_offset = 0;
};

// The rule at `pc` (for a return address, the address before it: the call's last byte), a return
// address of the calling thread's stack. Walks the loaded objects with dl_iterate_phdr, under the
// loader's lock, unless `pc` is in the function of the rule this thread found last within the
// same `generation` of rules (fast_unwind.h: a new one after each unload).
FrameRule find_frame_rule(std::uintptr_t pc, std::uint64_t generation);

// The same from one object's .eh_frame_hdr, mapped at `header` (for tests and the above).
FrameRule frame_rule_from_header(const std::uint8_t* header, std::uintptr_t pc);

}  // namespace tleak::agent
