#include "tleak/runtime/detail/fused_program.h"

#include <algorithm>

namespace tleak::runtime::detail {
namespace {

// Tiles small enough that a program's registers stay in L1; a register's stride is offset from
// 4 KiB so its loads do not falsely wait on stores to the inputs (4K aliasing).
constexpr std::int64_t kTile = 512;
constexpr std::int64_t kRegisterStride = kTile + 16;

}  // namespace

void assign_registers(FusedProgram& program) {
  auto& code = program.instructions;
  std::vector<int> last_read(code.size(), -1);
  for (std::size_t k = 0; k < code.size(); ++k) {
    for (const FusedOperand* o : {&code[k].x, &code[k].y}) {
      if (!o->external) last_read[static_cast<std::size_t>(o->index)] = static_cast<int>(k);
    }
  }
  std::vector<int> register_of(code.size(), -1), free_registers;
  int count = 0;
  for (std::size_t k = 0; k < code.size(); ++k) {
    FusedInstruction& ins = code[k];
    for (FusedOperand* o : {&ins.x, &ins.y}) {
      if (o->external) continue;
      const auto producer = static_cast<std::size_t>(o->index);
      const int reg = register_of[producer];
      if (last_read[producer] == static_cast<int>(k) &&
          std::find(free_registers.begin(), free_registers.end(), reg) == free_registers.end()) {
        free_registers.push_back(reg);
      }
    }
    for (FusedOperand* o : {&ins.x, &ins.y}) {
      if (!o->external) o->index = register_of[static_cast<std::size_t>(o->index)];
    }
    if (k + 1 == code.size()) {
      ins.dst = -1;
    } else if (free_registers.empty()) {
      ins.dst = count++;
    } else {
      ins.dst = free_registers.back();
      free_registers.pop_back();
    }
    register_of[k] = ins.dst;
  }
  program.register_count = count;
}

void interpret(const FusedProgram& program, const float* const* inputs, float* out, std::int64_t begin,
               std::int64_t end) {
  if (begin >= end) return;  // generated code did it all: no registers to make
  std::vector<float> registers(static_cast<std::size_t>(program.register_count * kRegisterStride));
  const auto& code = program.instructions;
  for (std::int64_t start = begin; start < end; start += kTile) {
    const std::int64_t len = std::min(kTile, end - start);
    const auto locate = [&](const FusedOperand& o, bool* is_scalar) -> const float* {
      if (!o.external) {
        *is_scalar = false;
        return registers.data() + static_cast<std::size_t>(o.index * kRegisterStride);
      }
      *is_scalar = program.scalar_input[static_cast<std::size_t>(o.index)];
      const float* base = inputs[o.index];
      return *is_scalar ? base : base + start;
    };
    for (const FusedInstruction& ins : code) {
      float* dst = ins.dst < 0 ? out + start : registers.data() + static_cast<std::size_t>(ins.dst * kRegisterStride);
      bool xs = false, ys = false;
      const float* x = locate(ins.x, &xs);
      if (ins.op->unary_tile != nullptr) {
        if (xs) {
          std::fill_n(dst, len, ins.op->unary(x[0]));
        } else {
          ins.op->unary_tile(x, dst, len);
        }
      } else {
        const float* y = locate(ins.y, &ys);
        ins.op->binary_tile(x, xs, y, ys, dst, len);
      }
    }
  }
}

}  // namespace tleak::runtime::detail
