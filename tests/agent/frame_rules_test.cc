// The agent's reader of unwind tables (agent/src/frame_rules.h) on tables written here byte by
// byte: every call-frame instruction a compiler emits for x86-64, where each rule changes, and what
// it leaves to libunwind. (Compiled code is checked against libunwind's walk by
// ProgramRun.TheAgentsStackWalkGivesLibunwindsAddresses; these are the cases no compiler is asked
// to make on purpose.)
#include "frame_rules.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace {

using tleak::agent::frame_rule_from_header;
using tleak::agent::FrameRule;

// One object's .eh_frame_hdr, one CIE and one FDE in a buffer; the FDE covers [begin, begin +
// 0x100) of a made-up code address (nothing at it is read).
class Tables {
 public:
  // `augmentation`: the CIE's ("zR", "zRS"...); `fde_program`: the FDE's instructions.
  Tables(const std::string& augmentation, const std::vector<std::uint8_t>& fde_program) {
    bytes_.resize(1024);
    std::uint8_t* base = bytes_.data();
    header_ = base;
    // The index: version 1, .eh_frame's address pc-relative sdata4, a count as udata4, the table
    // data-relative sdata4 (what the linker writes).
    base[0] = 1;
    base[1] = 0x1b;
    base[2] = 0x03;
    base[3] = 0x3b;
    put32(base + 4, 0);
    put32(base + 8, 1);
    const std::size_t cie = 64, fde = 128;
    begin_ = reinterpret_cast<std::uintptr_t>(base) + 0x10000;
    put32(base + 12, static_cast<std::int32_t>(begin_ - reinterpret_cast<std::uintptr_t>(base)));
    put32(base + 16, static_cast<std::int32_t>(fde));

    // CIE: version 1, the augmentation, code alignment 1, data alignment -8, return address in
    // register 16, pointers pc-relative sdata4; CFA = rsp + 8, return address at CFA - 8.
    std::vector<std::uint8_t> c = {0, 0, 0, 0, 1};
    c.insert(c.end(), augmentation.begin(), augmentation.end());
    c.push_back(0);
    c.insert(c.end(), {0x01, 0x78, 0x10, 0x01, 0x1b, 0x0c, 0x07, 0x08, 0x90, 0x01});
    while ((c.size() + 4) % 8 != 0) c.push_back(0);  // DW_CFA_nop
    put32(base + cie, static_cast<std::int32_t>(c.size()));
    std::memcpy(base + cie + 4, c.data(), c.size());

    // FDE: the CIE pointer, pc_begin pc-relative, pc_range, no augmentation data, the program.
    std::uint8_t* f = base + fde;
    put32(f + 4, static_cast<std::int32_t>(fde + 4 - cie));
    put32(f + 8, static_cast<std::int32_t>(begin_ - reinterpret_cast<std::uintptr_t>(f + 8)));
    put32(f + 12, 0x100);
    f[16] = 0;
    if (!fde_program.empty()) std::memcpy(f + 17, fde_program.data(), fde_program.size());
    std::size_t length = 13 + fde_program.size();
    while ((length + 4) % 8 != 0) f[4 + length++] = 0;
    put32(f, static_cast<std::int32_t>(length));
  }

  FrameRule at(std::uintptr_t offset) const {
    return frame_rule_from_header(header_, begin_ + offset);
  }

 private:
  static void put32(std::uint8_t* at, std::int32_t value) { std::memcpy(at, &value, 4); }
  std::vector<std::uint8_t> bytes_;
  const std::uint8_t* header_ = nullptr;
  std::uintptr_t begin_ = 0;
};

void expect_step(const FrameRule& r, bool from_rbp, int cfa_offset, bool rbp_saved,
                 int rbp_offset) {
  ASSERT_EQ(r.kind, FrameRule::Kind::kStep);
  EXPECT_EQ(r.cfa_from_rbp, from_rbp);
  EXPECT_EQ(r.cfa_offset, cfa_offset);
  EXPECT_EQ(r.rbp_saved, rbp_saved);
  if (rbp_saved) {
    EXPECT_EQ(r.rbp_offset, rbp_offset);
  }
}

// push rbp; mov rbp, rsp; ...; an epilogue in the middle (remember/restore state); another path's
// epilogue at the end.
TEST(FrameRules, AFramePointerFunctionWithTwoEpiloguesRuleByRule) {
  const Tables t("zR", {
                           0x41,              // advance 1
                           0x0e, 0x10,        // def_cfa_offset 16
                           0x86, 0x02,        // offset r6 (rbp) at CFA - 16
                           0x43,              // advance 3
                           0x0d, 0x06,        // def_cfa_register rbp
                           0x02, 0x20,        // advance_loc1 0x20
                           0x0a,              // remember_state
                           0x0c, 0x07, 0x08,  // def_cfa rsp + 8 (the epilogue's pop and ret)
                           0xc6,              // restore r6 (rbp: as the CIE has it, kept)
                           0x41,              // advance 1
                           0x0b,              // restore_state
                           0x03, 0x40, 0x00,  // advance_loc2 0x40
                           0x0c, 0x07, 0x08,  // def_cfa rsp + 8
                       });
  expect_step(t.at(0x00), false, 8, false, 0);
  expect_step(t.at(0x01), false, 16, true, -16);
  expect_step(t.at(0x03), false, 16, true, -16);
  expect_step(t.at(0x04), true, 16, true, -16);
  expect_step(t.at(0x23), true, 16, true, -16);
  expect_step(t.at(0x24), false, 8, false, 0);   // in the first epilogue
  expect_step(t.at(0x25), true, 16, true, -16);  // after it, the body's rule again
  expect_step(t.at(0x64), true, 16, true, -16);
  expect_step(t.at(0x65), false, 8, true, -16);  // the last epilogue: rbp's slot is still its rule
}

// Without a frame pointer: pushes and a sub move the CFA from rsp; the signed forms and the
// four-byte advance are read as such.
TEST(FrameRules, AnRspFunctionWithSignedAndWideForms) {
  const Tables t("zR", {
                           0x41,                    // advance 1
                           0x13, 0x7e,              // def_cfa_offset_sf -2 * -8 = 16
                           0x11, 0x06, 0x7e,        // offset_extended_sf rbp at CFA + (-2 * -8)
                           0x04, 0x10, 0,    0, 0,  // advance_loc4 16
                           0x12, 0x07, 0x7a,        // def_cfa_sf rsp, -6 * -8 = 48
                           0x2e, 0x08,              // GNU_args_size 8 (ignored)
                           0x04, 0x10, 0,    0, 0,  // advance_loc4 16
                           0x08, 0x06,              // same_value rbp
                       });
  expect_step(t.at(0x00), false, 8, false, 0);
  expect_step(t.at(0x01), false, 16, true, 16);
  expect_step(t.at(0x11), false, 48, true, 16);
  expect_step(t.at(0x21), false, 48, false, 0);
}

// What the walk leaves to libunwind, and where a thread's stack ends.
TEST(FrameRules, ExpressionsSignalFramesAndTheOutermostFrame) {
  const Tables expression("zR", {0x41, 0x0f, 0x02, 0x77, 0x10});  // advance 1; def_cfa_expression
  EXPECT_EQ(expression.at(0x00).kind, FrameRule::Kind::kStep);
  EXPECT_EQ(expression.at(0x01).kind, FrameRule::Kind::kUnsupported);
  const Tables rbp_in_a_register("zR", {0x41, 0x09, 0x06, 0x03});  // register rbp in rbx
  EXPECT_EQ(rbp_in_a_register.at(0x01).kind, FrameRule::Kind::kUnsupported);
  const Tables other_register("zR", {0x41, 0x0c, 0x0a, 0x00});  // def_cfa r10 + 0 (a realignment)
  EXPECT_EQ(other_register.at(0x01).kind, FrameRule::Kind::kUnsupported);
  const Tables signal_frame("zRS", {});
  EXPECT_EQ(signal_frame.at(0x00).kind, FrameRule::Kind::kUnsupported);
  const Tables outermost("zR", {0x07, 0x10});  // undefined r16: no return address
  EXPECT_EQ(outermost.at(0x00).kind, FrameRule::Kind::kOutermost);
  const Tables unknown_augmentation("zRX", {});
  EXPECT_EQ(unknown_augmentation.at(0x00).kind, FrameRule::Kind::kUnsupported);
  const Tables unknown_instruction("zR", {0x41, 0x2d});                  // GNU_window_save: SPARC's
  EXPECT_EQ(unknown_instruction.at(0x00).kind, FrameRule::Kind::kStep);  // before it
  EXPECT_EQ(unknown_instruction.at(0x01).kind, FrameRule::Kind::kUnsupported);
  const Tables restored_too_often("zR", {0x41, 0x0b});  // restore_state with nothing remembered
  EXPECT_EQ(restored_too_often.at(0x01).kind, FrameRule::Kind::kUnsupported);
}

// An address outside every FDE the index lists has no rule.
TEST(FrameRules, AnAddressNoFdeCoversHasNone) {
  const Tables t("zR", {});
  EXPECT_EQ(t.at(0xff).kind, FrameRule::Kind::kStep);
  EXPECT_EQ(t.at(0x100).kind, FrameRule::Kind::kUnsupported);
  EXPECT_EQ(t.at(static_cast<std::uintptr_t>(-1)).kind,
            FrameRule::Kind::kUnsupported);  // below begin
}

}  // namespace
