// The tape's gradient of every differentiable op against central finite differences.
#include <functional>

#include "runtime_fixture.h"

namespace tleak::runtime {
namespace {

using testing::RuntimeTest;

class GradientTest : public RuntimeTest {
 protected:
  // loss = sum(f(inputs) * weights): weights make every output element matter differently.
  using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

  void check(const Fn& f, std::vector<Tensor> inputs, float tolerance = 2e-2f) {
    const Tensor probe = f(inputs);
    const Tensor weights = random_tensor(probe.shape(), 0.5f, 1.5f);
    const auto loss = [&](const std::vector<Tensor>& in) { return reduce_sum(mul(f(in), weights)); };

    std::vector<Tensor> analytic;
    {
      GradientTape tape(rt_);
      for (const Tensor& t : inputs) tape.watch(t);
      analytic = tape.gradient(loss(inputs), inputs);
    }
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      ASSERT_TRUE(analytic[i].defined()) << "input " << i;
      ASSERT_EQ(analytic[i].shape(), inputs[i].shape());
      const auto values = inputs[i].to_vector();
      const auto grad = analytic[i].to_vector();
      for (std::size_t k = 0; k < values.size(); ++k) {
        const float h = 1e-2f;
        auto nudged = inputs;
        auto plus = values, minus = values;
        plus[k] += h;
        minus[k] -= h;
        nudged[i] = constant(rt_, plus, inputs[i].shape());
        const float up = loss(nudged).item();
        nudged[i] = constant(rt_, minus, inputs[i].shape());
        const float down = loss(nudged).item();
        const float numeric = (up - down) / (2 * h);
        ASSERT_NEAR(grad[k], numeric, tolerance * std::max(1.0f, std::abs(numeric))) << "input " << i << " element " << k;
      }
    }
  }
};

TEST_F(GradientTest, Elementwise) {
  const Tensor a = random_tensor({2, 3}), b = random_tensor({2, 3}, 0.5f, 2), s = random_tensor({}, 0.5f, 2);
  check([](auto& in) { return add(in[0], in[1]); }, {a, b});
  check([](auto& in) { return sub(in[0], in[1]); }, {a, b});
  check([](auto& in) { return mul(in[0], in[1]); }, {a, b});
  check([](auto& in) { return div(in[0], in[1]); }, {a, b});
  check([](auto& in) { return mul(in[0], in[1]); }, {a, s});  // scalar broadcast
  check([](auto& in) { return add(in[1], in[0]); }, {a, s});
  check([](auto& in) { return square(in[0]); }, {a});
  check([](auto& in) { return neg(in[0]); }, {a});
  check([](auto& in) { return exp(in[0]); }, {a});
  check([](auto& in) { return tanh(in[0]); }, {a});
  check([](auto& in) { return relu(in[0]); }, {random_tensor({2, 3}, 0.1f, 1)});
  check([](auto& in) { return relu(in[0]); }, {random_tensor({2, 3}, -1, -0.1f)});
}

TEST_F(GradientTest, MatmulReductionsAndShapes) {
  check([](auto& in) { return matmul(in[0], in[1]); }, {random_tensor({3, 4}), random_tensor({4, 2})});
  check([](auto& in) { return reduce_sum(in[0]); }, {random_tensor({2, 3})});
  check([](auto& in) { return reduce_mean(in[0]); }, {random_tensor({2, 3})});
  check([](auto& in) { return reduce_sum(in[0], 1); }, {random_tensor({2, 3, 2})});
  check([](auto& in) { return reduce_mean(in[0], 0); }, {random_tensor({2, 3})});
  check([](auto& in) { return reshape(in[0], {3, 2}); }, {random_tensor({2, 3})});
  check([](auto& in) { return transpose(in[0]); }, {random_tensor({2, 3})});
  check([](auto& in) { return transpose(in[0], {2, 0, 1}); }, {random_tensor({2, 3, 2})});
  check([](auto& in) { return stack({in[0], in[1]}, 1); }, {random_tensor({2, 3}), random_tensor({2, 3})});
  check([](auto& in) { return concat({in[0], in[1]}, 1); }, {random_tensor({2, 3}), random_tensor({2, 1})});
  check([](auto& in) { return broadcast_to(in[0], {2, 2}); }, {random_tensor({})});
}

TEST_F(GradientTest, ChainsAccumulateThroughSharedInputs) {
  // d/dx of sum(tanh(x * x + x)) uses x three times.
  check([](auto& in) { return tanh(add(mul(in[0], in[0]), in[0])); }, {random_tensor({4})});
}

TEST_F(GradientTest, VariablesReadUnderATapeAreWatched) {
  Variable w(rt_, "w", constant(rt_, {1, 2, 3}, {3}));
  GradientTape tape(rt_);
  const Tensor loss = reduce_sum(square(w.read()));
  const auto grads = tape.gradient(loss, std::vector<Variable>{w});
  EXPECT_EQ(grads[0].to_vector(), (std::vector<float>{2, 4, 6}));
}

TEST_F(GradientTest, NonPersistentTapeReleasesWhatItHeldAfterOneGradient) {
  const Tensor x = random_tensor({1000});
  GradientTape tape(rt_);
  tape.watch(x);
  Tensor y = reduce_sum(exp(tanh(x)));
  EXPECT_EQ(tape.recorded_ops(), 3u);
  const auto held_blocks = pool_.stats().blocks_in_use.current;
  auto grads = tape.gradient(y, {x});
  grads.clear();
  EXPECT_EQ(tape.recorded_ops(), 0u);
  EXPECT_LT(pool_.stats().blocks_in_use.current, held_blocks);  // tanh's and exp's outputs are gone
  EXPECT_THROW(tape.gradient(y, {x}), std::logic_error);
}

TEST_F(GradientTest, PersistentTapeAnswersTwiceAndHoldsUntilDestroyed) {
  const Tensor x = random_tensor({10});
  auto tape = std::make_unique<GradientTape>(rt_, true);
  tape->watch(x);
  const Tensor y = reduce_sum(square(x));
  const auto first = tape->gradient(y, {x})[0].to_vector();
  const auto second = tape->gradient(y, {x})[0].to_vector();
  EXPECT_EQ(first, second);
  EXPECT_EQ(tape->recorded_ops(), 2u);
  tape.reset();
}

TEST_F(GradientTest, UnconnectedSourceHasNoGradient) {
  const Tensor x = random_tensor({3}), unrelated = random_tensor({3});
  GradientTape tape(rt_);
  tape.watch(x);
  tape.watch(unrelated);
  const auto grads = tape.gradient(reduce_sum(x), {x, unrelated});
  EXPECT_TRUE(grads[0].defined());
  EXPECT_FALSE(grads[1].defined());
}

}  // namespace
}  // namespace tleak::runtime
