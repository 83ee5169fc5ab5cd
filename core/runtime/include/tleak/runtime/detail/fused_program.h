// What a fused elementwise kernel computes, as the JIT hands it to the code generator and to the
// tile interpreter: a straight-line program over the kernel's inputs whose last instruction's value
// is the output. Values between instructions live in registers: a tile of floats for the
// interpreter, a vector register in generated code.
#pragma once

#include <cstdint>
#include <vector>

#include "tleak/runtime/detail/op_def.h"

namespace tleak::runtime::detail {

struct FusedOperand {
  bool external = true;  // an input of the kernel, else a register
  int index = 0;
};

struct FusedInstruction {
  const OpDef* op;
  FusedOperand x, y;  // y only for binary ops
  int dst = -1;       // the register written; -1 for the last instruction, which writes the output
};

struct FusedProgram {
  std::vector<FusedInstruction> instructions;
  std::vector<bool> scalar_input;  // per kernel input: one value that every element reads
  int register_count = 0;
};

// Operands of `instructions` name, when not external, the instruction that produced them; this
// rewrites them to registers, reusing a register as soon as its last reader has read it, and sets
// `register_count`. A chain then cycles through one register however long it is. An instruction may
// write a register it reads: elementwise ops read element i before writing it.
void assign_registers(FusedProgram& program);

// Evaluates elements [begin, end) of the output in cache-sized tiles, one op at a time per tile.
void interpret(const FusedProgram& program, const float* const* inputs, float* out, std::int64_t begin,
               std::int64_t end);

}  // namespace tleak::runtime::detail
