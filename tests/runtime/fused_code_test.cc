// Fused kernels run as generated machine code where the CPU and the ops allow, else through the
// tile interpreter; both must give exactly the numbers eager mode gives (the ops involved are single
// IEEE operations, so not "near": equal), for any length (the generated loop does eight floats at a
// time and the interpreter finishes the tail), with scalar inputs, NaN and signed zeros.
#include <cstring>

#include "runtime_fixture.h"

#if defined(__x86_64__)
#include <xbyak/xbyak_util.h>
#endif

namespace tleak::runtime {
namespace {

using testing::RuntimeTest;

class FusedCodeTest : public RuntimeTest {
 protected:
  // Where code can be generated at all.
  static bool cpu_has_avx() {
#if defined(__x86_64__)
    return Xbyak::util::Cpu().has(Xbyak::util::Cpu::tAVX);
#else
    return false;
#endif
  }

  // Bitwise: NaN equals NaN and -0 differs from +0.
  static void expect_identical(const std::vector<float>& actual, const std::vector<float>& expected) {
    ASSERT_EQ(actual.size(), expected.size());
    for (std::size_t i = 0; i < actual.size(); ++i) {
      ASSERT_EQ(std::memcmp(&actual[i], &expected[i], sizeof(float)), 0)
          << "element " << i << ": " << actual[i] << " against " << expected[i];
    }
  }

  // Runs `body` eagerly, JIT with generated code and JIT interpreted; all three must agree.
  // Returns how many fused kernels were generated.
  std::size_t check_all_agree(const Function::Body& body, const std::vector<Tensor>& inputs) {
    Function eager(rt_, "f", body, Mode::kEager);
    Function generated(rt_, "f", body, Mode::kJit, {.generate_code = true});
    Function interpreted(rt_, "f", body, Mode::kJit, {.generate_code = false});
    const auto expected = eager(inputs)[0].to_vector();
    expect_identical(generated(inputs)[0].to_vector(), expected);
    expect_identical(interpreted(inputs)[0].to_vector(), expected);
    EXPECT_EQ(interpreted.last_executable()->generated_kernel_count(), 0u);
    return generated.last_executable()->generated_kernel_count();
  }
};

// relu's gradient op, which gradient tapes emit (not a public op).
Tensor relu_grad(Runtime& rt, const Tensor& grad, const Tensor& x) { return detail::dispatch(rt, detail::op("relu_grad"), {grad, x}, {}); }

std::vector<Tensor> arithmetic_chain(Runtime& rt, const std::vector<Tensor>& a) {
  Tensor t = add(a[0], a[1]);
  t = mul(t, a[1]);
  t = sub(t, a[2]);
  t = square(t);
  t = div(t, add(a[2], a[1]));
  t = neg(t);
  t = relu(add(t, a[0]));
  return {relu_grad(rt, mul(t, a[2]), sub(a[0], a[1]))};
}

TEST_F(FusedCodeTest, GeneratedAndInterpretedKernelsMatchEagerAtEveryLength) {
  for (std::int64_t n : {1, 3, 7, 8, 9, 15, 16, 17, 64, 100, 1000, 4099}) {
    SCOPED_TRACE("length " + std::to_string(n));
    const std::vector<Tensor> inputs = {random_tensor({n}), random_tensor({n}), random_tensor({n}, 0.5f, 2.0f)};
    const std::size_t generated = check_all_agree(
        [this](const std::vector<Tensor>& a, const std::vector<std::int64_t>&) { return arithmetic_chain(rt_, a); }, inputs);
    // The chain, and add(a[2], a[1]) and sub(a[0], a[1]), which it reads: three kernels.
    EXPECT_EQ(generated, cpu_has_avx() && n >= 8 ? 3u : 0u);  // shorter than a vector: interpreted
  }
}

TEST_F(FusedCodeTest, ScalarInputsAreBroadcast) {
  const auto body = [this](const std::vector<Tensor>& a, const std::vector<std::int64_t>&) {
    const Tensor t = sub(mul(a[0], a[1]), scalar(rt_, 0.25f));  // a captured scalar and a scalar input
    return std::vector<Tensor>{add(div(a[1], t), square(a[1]))};
  };
  const std::size_t generated = check_all_agree(body, {random_tensor({37}), random_tensor({1})});
  EXPECT_EQ(generated, cpu_has_avx() ? 1u : 0u);  // the chain; square(a[1]) is one value, interpreted
}

TEST_F(FusedCodeTest, NaNAndSignedZerosPassThroughReluAsInEagerMode) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> values = {nan, -0.0f, 0.0f, -1.0f, 1.0f, -nan, 3.5f, -2.5f, nan, -0.0f, 2.0f};
  const Tensor x = constant(rt_, values, {static_cast<std::int64_t>(values.size())});
  const auto body = [](const std::vector<Tensor>& a, const std::vector<std::int64_t>&) {
    return std::vector<Tensor>{relu(neg(relu(a[0])))};
  };
  EXPECT_EQ(check_all_agree(body, {x}), cpu_has_avx() ? 1u : 0u);
  const auto grad = [this](const std::vector<Tensor>& a, const std::vector<std::int64_t>&) {
    return std::vector<Tensor>{relu_grad(rt_, square(a[0]), neg(a[0]))};
  };
  EXPECT_EQ(check_all_agree(grad, {x}), cpu_has_avx() ? 2u : 0u);  // neg(a[0]) is a kernel of its own
}

TEST_F(FusedCodeTest, TranscendentalOpsAreInterpreted) {
  const auto body = [](const std::vector<Tensor>& a, const std::vector<std::int64_t>&) {
    return std::vector<Tensor>{add(tanh(mul(a[0], a[0])), a[0])};
  };
  const Tensor x = random_tensor({100});
  Function jit(rt_, "f", body, Mode::kJit);
  Function eager(rt_, "f", body, Mode::kEager);
  expect_identical(jit({x})[0].to_vector(), eager({x})[0].to_vector());
  EXPECT_EQ(jit.last_executable()->fused_kernel_count(), 1u);
  EXPECT_EQ(jit.last_executable()->generated_kernel_count(), 0u);
}

// A chain reading eleven distinct inputs needs more pointer registers than the generated loop has:
// interpreted, with the same numbers. Ten fit.
TEST_F(FusedCodeTest, ChainsBeyondThePointerRegistersAreInterpreted) {
  const auto sum_all = [](const std::vector<Tensor>& a, const std::vector<std::int64_t>&) {
    Tensor t = a[0];
    for (std::size_t i = 1; i < a.size(); ++i) t = add(t, a[i]);
    return std::vector<Tensor>{t};
  };
  std::vector<Tensor> inputs;
  for (int i = 0; i < 10; ++i) inputs.push_back(random_tensor({33}));
  EXPECT_EQ(check_all_agree(sum_all, inputs), cpu_has_avx() ? 1u : 0u);
  inputs.push_back(random_tensor({33}));
  EXPECT_EQ(check_all_agree(sum_all, inputs), 0u);
}

// Operands before assignment name the instruction that produced them.
detail::FusedInstruction instruction(const char* op, detail::FusedOperand x, detail::FusedOperand y = {}) {
  return {&detail::op(op), x, y, -1};
}

TEST(RegisterAssignment, AChainCyclesThroughOneRegister) {
  detail::FusedProgram chain;
  chain.scalar_input = {false, false};
  chain.instructions.push_back(instruction("add", {true, 0}, {true, 1}));
  for (int k = 1; k < 8; ++k) chain.instructions.push_back(instruction(k % 2 ? "square" : "mul", {false, k - 1}, {true, 1}));
  detail::assign_registers(chain);
  EXPECT_EQ(chain.register_count, 1);
  for (int k = 0; k < 7; ++k) EXPECT_EQ(chain.instructions[static_cast<std::size_t>(k)].dst, 0) << k;
  EXPECT_EQ(chain.instructions.back().dst, -1);  // the output
  EXPECT_EQ(chain.instructions[3].x.external, false);
  EXPECT_EQ(chain.instructions[3].x.index, 0);
}

TEST(RegisterAssignment, ValuesStillToBeReadKeepTheirRegisters) {
  // v0 = a+b; v1 = a*b; v2 = v0-v1; v3 = v0*v2 (v0 read last here); out = v3+v1.
  detail::FusedProgram p;
  p.scalar_input = {false, false};
  p.instructions = {instruction("add", {true, 0}, {true, 1}), instruction("mul", {true, 0}, {true, 1}),
                    instruction("sub", {false, 0}, {false, 1}), instruction("mul", {false, 0}, {false, 2}),
                    instruction("add", {false, 3}, {false, 1})};
  detail::assign_registers(p);
  EXPECT_EQ(p.register_count, 3);  // v0, v1 and v2 are live together
  const auto& c = p.instructions;
  EXPECT_NE(c[2].dst, c[0].dst);  // v0 is read again after v2 is written
  EXPECT_NE(c[2].dst, c[1].dst);
  EXPECT_TRUE(c[3].dst == c[0].dst || c[3].dst == c[2].dst);  // v0's or v2's, both read for the last time
  EXPECT_EQ(c[4].x.index, c[3].dst);
  EXPECT_EQ(c[4].y.index, c[1].dst);  // v1 survived until its last read
  EXPECT_NE(c[3].dst, c[1].dst);
}

}  // namespace
}  // namespace tleak::runtime
