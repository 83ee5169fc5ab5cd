#include "fused_code.h"

#include <cstring>

#if defined(__x86_64__)
#include <xbyak/xbyak.h>
#include <xbyak/xbyak_util.h>
#endif

namespace tleak::runtime::detail {

#if defined(__x86_64__)
namespace {

enum class VectorOp { kAdd, kSub, kMul, kDiv, kSquare, kNeg, kRelu, kReluGrad };

bool vector_op_of(const OpDef& op, VectorOp* out) {
  static constexpr struct {
    const char* name;
    VectorOp op;
  } kOps[] = {{"add", VectorOp::kAdd},       {"sub", VectorOp::kSub}, {"mul", VectorOp::kMul},
              {"div", VectorOp::kDiv},       {"square", VectorOp::kSquare}, {"neg", VectorOp::kNeg},
              {"relu", VectorOp::kRelu},     {"relu_grad", VectorOp::kReluGrad}};
  for (const auto& entry : kOps) {
    if (std::strcmp(op.name, entry.name) == 0) {
      *out = entry.op;
      return true;
    }
  }
  return false;
}

bool cpu_has_avx() {
  static const bool has = Xbyak::util::Cpu().has(Xbyak::util::Cpu::tAVX);
  return has;
}

// AVX (not AVX2) instructions only, on ymm registers: ymm0.. hold the program's registers, the
// top five are scratch and constants, the scalar inputs' broadcasts sit below them.
class AvxKernel final : public FusedCode, private Xbyak::CodeGenerator {
 public:
  static constexpr int kLoadedX = 15;  // the x operand, when it is an input
  static constexpr int kResult = 14;   // the last instruction's value, stored to the output
  static constexpr int kMask = 13;     // relu_grad's comparison
  static constexpr int kZero = 12;
  static constexpr int kSignBit = 11;
  static constexpr int kFirstBroadcast = 10;  // downwards, one per scalar input
  static constexpr int kMaxVectorInputs = 10;  // pointer registers the stack frame can give

  // Code is written while the pages are writable, then made read+execute only.
  explicit AvxKernel(const FusedProgram& program, const std::vector<VectorOp>& ops)
      : Xbyak::CodeGenerator(Xbyak::DEFAULT_MAX_CODE_SIZE, Xbyak::DontSetProtectRWE) {
    emit(program, ops);
    setProtectModeRE();
    entry_ = getCode<void (*)(const float* const*, float*, std::int64_t)>();
  }

  void run(const float* const* inputs, float* out, std::int64_t n) const override { entry_(inputs, out, n); }

 private:
  void emit(const FusedProgram& program, const std::vector<VectorOp>& ops) {
    using namespace Xbyak;
    const auto input_count = static_cast<int>(program.scalar_input.size());
    std::vector<int> pointer_of(static_cast<std::size_t>(input_count), -1), broadcast_of(pointer_of);
    int vectors = 0, scalars = 0;
    for (int j = 0; j < input_count; ++j) {
      if (program.scalar_input[static_cast<std::size_t>(j)]) {
        broadcast_of[static_cast<std::size_t>(j)] = kFirstBroadcast - scalars++;
      } else {
        pointer_of[static_cast<std::size_t>(j)] = 1 + vectors++;  // t[0] is the element index
      }
    }
    util::StackFrame frame(this, 3, 1 + vectors, 0, false);
    const Reg64 &inputs = frame.p[0], &out = frame.p[1], &n = frame.p[2], &index = frame.t[0];
    Label constants, loop, done;

    for (int j = 0; j < input_count; ++j) {
      const auto s = static_cast<std::size_t>(j);
      if (pointer_of[s] >= 0) {
        mov(frame.t[pointer_of[s]], ptr[inputs + 8 * j]);
      } else {
        mov(rax, ptr[inputs + 8 * j]);
        vbroadcastss(Ymm(broadcast_of[s]), dword[rax]);
      }
    }
    vxorps(Ymm(kZero), Ymm(kZero), Ymm(kZero));
    vbroadcastss(Ymm(kSignBit), dword[rip + constants]);
    xor_(index, index);
    test(n, n);
    jz(done, T_NEAR);

    L(loop);
    // An operand is a register or, for a vector input, memory; xbyak takes either as an Operand
    // reference, so the Address must outlive the call it is passed to.
    struct Source {
      Ymm reg;
      Address mem;
      bool in_memory;
      const Operand& get() const { return in_memory ? static_cast<const Operand&>(mem) : reg; }
    };
    const auto source = [&](const FusedOperand& o) -> Source {
      const auto s = static_cast<std::size_t>(o.index);
      if (!o.external) return {Ymm(o.index), yword[rax], false};
      if (broadcast_of[s] >= 0) return {Ymm(broadcast_of[s]), yword[rax], false};
      return {Ymm(0), yword[frame.t[pointer_of[s]] + index * 4], true};
    };
    // The first operand of an AVX instruction must be a register.
    const auto in_register = [&](const FusedOperand& o, int scratch) -> Ymm {
      const Source src = source(o);
      if (!src.in_memory) return src.reg;
      vmovups(Ymm(scratch), src.mem);
      return Ymm(scratch);
    };
    for (std::size_t k = 0; k < ops.size(); ++k) {
      const FusedInstruction& ins = program.instructions[k];
      const Ymm dst(ins.dst < 0 ? kResult : ins.dst);
      switch (ops[k]) {
        case VectorOp::kAdd: vaddps(dst, in_register(ins.x, kLoadedX), source(ins.y).get()); break;
        case VectorOp::kSub: vsubps(dst, in_register(ins.x, kLoadedX), source(ins.y).get()); break;
        case VectorOp::kMul: vmulps(dst, in_register(ins.x, kLoadedX), source(ins.y).get()); break;
        case VectorOp::kDiv: vdivps(dst, in_register(ins.x, kLoadedX), source(ins.y).get()); break;
        case VectorOp::kSquare: {
          const Ymm x = in_register(ins.x, kLoadedX);
          vmulps(dst, x, x);
          break;
        }
        case VectorOp::kNeg: vxorps(dst, in_register(ins.x, kLoadedX), Ymm(kSignBit)); break;
        // maxps returns its second operand when either is NaN or both are zeros: NaN and -0 pass
        // through as they do in the interpreter's kernels.
        case VectorOp::kRelu: vmaxps(dst, Ymm(kZero), source(ins.x).get()); break;
        case VectorOp::kReluGrad:  // the gradient x where the input y is positive, else 0
          vcmpgt_oqps(Ymm(kMask), in_register(ins.y, kMask), Ymm(kZero));
          vandps(dst, Ymm(kMask), source(ins.x).get());
          break;
      }
    }
    vmovups(yword[out + index * 4], Ymm(kResult));
    add(index, static_cast<std::uint32_t>(kLanes));
    cmp(index, n);
    jb(loop, T_NEAR);

    L(done);
    vzeroupper();
    frame.close();
    align(4);
    L(constants);
    dd(0x80000000u);
  }

  void (*entry_)(const float* const*, float*, std::int64_t) = nullptr;
};

}  // namespace

std::unique_ptr<FusedCode> FusedCode::generate(const FusedProgram& program, std::int64_t elements) {
  // An output shorter than one vector would run only the interpreter's tail.
  if (elements < kLanes || !cpu_has_avx() || program.instructions.empty()) return nullptr;
  std::vector<VectorOp> ops;
  for (const FusedInstruction& ins : program.instructions) {
    VectorOp op;
    if (!vector_op_of(*ins.op, &op)) return nullptr;
    ops.push_back(op);
  }
  int scalars = 0, vectors = 0;
  for (bool scalar : program.scalar_input) (scalar ? scalars : vectors)++;
  if (vectors > AvxKernel::kMaxVectorInputs || program.register_count + scalars > AvxKernel::kFirstBroadcast + 1) {
    return nullptr;
  }
  try {
    return std::make_unique<AvxKernel>(program, ops);
  } catch (const Xbyak::Error&) {
    return nullptr;  // e.g. a program too long for the code buffer: the interpreter runs it
  }
}

#else

std::unique_ptr<FusedCode> FusedCode::generate(const FusedProgram&, std::int64_t) { return nullptr; }

#endif

}  // namespace tleak::runtime::detail
