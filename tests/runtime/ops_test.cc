// Every op against a plain reference on random inputs.
#include <cstring>
#include <functional>

#include "runtime_fixture.h"

namespace tleak::runtime {
namespace {

using testing::RuntimeTest;

class OpsTest : public RuntimeTest {};

std::vector<float> map2(const std::vector<float>& a, const std::vector<float>& b, float (*f)(float, float)) {
  std::vector<float> out(std::max(a.size(), b.size()));
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = f(a.size() == 1 ? a[0] : a[i], b.size() == 1 ? b[0] : b[i]);
  return out;
}

TEST_F(OpsTest, BinaryElementwiseMatchLoopsIncludingScalarBroadcast) {
  const Tensor a = random_tensor({4, 5}), b = random_tensor({4, 5}, 0.5f, 2.0f), s = random_tensor({}, 0.5f, 2.0f);
  struct Case {
    Tensor (*op)(const Tensor&, const Tensor&);
    float (*f)(float, float);
  };
  const Case cases[] = {{add, [](float x, float y) { return x + y; }},
                        {sub, [](float x, float y) { return x - y; }},
                        {mul, [](float x, float y) { return x * y; }},
                        {div, [](float x, float y) { return x / y; }}};
  for (const Case& c : cases) {
    expect_near(c.op(a, b).to_vector(), map2(a.to_vector(), b.to_vector(), c.f));
    expect_near(c.op(a, s).to_vector(), map2(a.to_vector(), s.to_vector(), c.f));
    expect_near(c.op(s, a).to_vector(), map2(s.to_vector(), a.to_vector(), c.f));
    EXPECT_EQ(c.op(s, a).shape(), (Shape{4, 5}));
  }
}

TEST_F(OpsTest, UnaryElementwiseMatchLoops) {
  const Tensor a = random_tensor({3, 7}, -3, 3);
  const auto x = a.to_vector();
  const auto apply = [&](float (*f)(float)) {
    std::vector<float> out;
    for (float v : x) out.push_back(f(v));
    return out;
  };
  expect_near(square(a).to_vector(), apply([](float v) { return v * v; }));
  expect_near(neg(a).to_vector(), apply([](float v) { return -v; }));
  expect_near(exp(a).to_vector(), apply([](float v) { return std::exp(v); }));
  expect_near(tanh(a).to_vector(), apply([](float v) { return std::tanh(v); }));
  expect_near(relu(a).to_vector(), apply([](float v) { return v > 0 ? v : 0.0f; }));
}

TEST_F(OpsTest, MatmulMatchesANaiveTripleLoop) {
  const Tensor a = random_tensor({7, 5}), b = random_tensor({5, 3});
  const auto x = a.to_vector(), y = b.to_vector();
  std::vector<float> expected(21, 0);
  for (int i = 0; i < 7; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 5; ++k) expected[i * 3 + j] += x[i * 5 + k] * y[k * 3 + j];
  expect_near(matmul(a, b).to_vector(), expected, 1e-5f);
  EXPECT_EQ(matmul(a, b).shape(), (Shape{7, 3}));
}

TEST_F(OpsTest, ReductionsOverAllAndOneAxis) {
  const Tensor a = random_tensor({2, 3, 4});
  const auto x = a.to_vector();
  double total = 0;
  for (float v : x) total += v;
  EXPECT_NEAR(reduce_sum(a).item(), total, 1e-5);
  EXPECT_NEAR(reduce_mean(a).item(), total / 24, 1e-6);
  EXPECT_EQ(reduce_sum(a).shape(), Shape{});
  for (int axis = 0; axis < 3; ++axis) {
    const Shape dims = {2, 3, 4};
    Shape out_shape = dims;
    out_shape.erase(out_shape.begin() + axis);
    std::vector<float> expected(static_cast<std::size_t>(num_elements(out_shape)), 0);
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j)
        for (int k = 0; k < 4; ++k) {
          const int idx[3] = {i, j, k};
          int kept[2], c = 0;
          for (int d = 0; d < 3; ++d) {
            if (d != axis) kept[c++] = idx[d];
          }
          const int o = kept[0] * static_cast<int>(out_shape[1]) + kept[1];
          expected[static_cast<std::size_t>(o)] += x[static_cast<std::size_t>(i * 12 + j * 4 + k)];
        }
    const Tensor s = reduce_sum(a, axis);
    EXPECT_EQ(s.shape(), out_shape);
    expect_near(s.to_vector(), expected, 1e-5f);
    std::vector<float> mean = expected;
    for (float& v : mean) v /= static_cast<float>(dims[static_cast<std::size_t>(axis)]);
    expect_near(reduce_mean(a, axis).to_vector(), mean, 1e-5f);
  }
  EXPECT_EQ(reduce_sum(a, -1).shape(), (Shape{2, 3}));
}

TEST_F(OpsTest, StackAndConcatPlaceEveryElement) {
  const Tensor a = random_tensor({2, 3}), b = random_tensor({2, 3});
  const auto x = a.to_vector(), y = b.to_vector();
  std::vector<float> s0 = x;
  s0.insert(s0.end(), y.begin(), y.end());
  expect_near(stack({a, b}, 0).to_vector(), s0);
  EXPECT_EQ(stack({a, b}, 0).shape(), (Shape{2, 2, 3}));
  std::vector<float> s1, c1;
  for (int i = 0; i < 2; ++i) {
    s1.insert(s1.end(), x.begin() + i * 3, x.begin() + i * 3 + 3);
    s1.insert(s1.end(), y.begin() + i * 3, y.begin() + i * 3 + 3);
  }
  expect_near(stack({a, b}, 1).to_vector(), s1);
  EXPECT_EQ(stack({a, b}, 1).shape(), (Shape{2, 2, 3}));
  expect_near(concat({a, b}, 0).to_vector(), s0);
  EXPECT_EQ(concat({a, b}, 0).shape(), (Shape{4, 3}));
  expect_near(concat({a, b}, 1).to_vector(), s1);  // same element order as stacking on axis 1
  EXPECT_EQ(concat({a, b}, 1).shape(), (Shape{2, 6}));
  const Tensor scalars = stack({scalar(rt_, 1), scalar(rt_, 2), scalar(rt_, 3)});
  EXPECT_EQ(scalars.to_vector(), (std::vector<float>{1, 2, 3}));
}

TEST_F(OpsTest, ReshapeSharesBytesAndTransposeMovesThem) {
  const Tensor a = random_tensor({2, 3, 4});
  const Tensor r = reshape(a, {4, -1});
  EXPECT_EQ(r.shape(), (Shape{4, 6}));
  EXPECT_EQ(r.buffer()->data(), a.buffer()->data());
  const Tensor t = transpose(reshape(a, {6, 4}));
  const auto x = a.to_vector(), y = t.to_vector();
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 4; ++j) ASSERT_EQ(y[static_cast<std::size_t>(j * 6 + i)], x[static_cast<std::size_t>(i * 4 + j)]);
  const Tensor p = transpose(a, {1, 2, 0});
  EXPECT_EQ(p.shape(), (Shape{3, 4, 2}));
  const auto z = p.to_vector();
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) ASSERT_EQ(z[static_cast<std::size_t>(j * 8 + k * 2 + i)], x[static_cast<std::size_t>(i * 12 + j * 4 + k)]);
}

TEST_F(OpsTest, CreationOps) {
  EXPECT_EQ(fill(rt_, {2, 2}, 7).to_vector(), (std::vector<float>(4, 7)));
  EXPECT_EQ(range(rt_, 4).to_vector(), (std::vector<float>{0, 1, 2, 3}));
  const Tensor ints = range_int(rt_, 3);
  EXPECT_EQ(ints.dtype(), DType::kInt32);
  EXPECT_EQ(ints.values<std::int32_t>()[2], 2);
  EXPECT_EQ(broadcast_to(scalar(rt_, 3), {2, 3}).to_vector(), (std::vector<float>(6, 3)));
  EXPECT_THROW(constant(rt_, {1, 2, 3}, {2, 2}), ShapeError);
}

TEST_F(OpsTest, RandomStatefulAdvancesItsStateTensorStatelessRepeats) {
  Generator gen(rt_, 1234);
  const auto state_before = gen.state().values<std::int32_t>()[2];
  const auto first = random_normal(gen, {1000}).to_vector();
  const auto second = random_normal(gen, {1000}).to_vector();
  EXPECT_NE(first, second);
  EXPECT_NE(gen.state().values<std::int32_t>()[2], state_before);
  double mean = 0, var = 0;
  for (float v : first) mean += v;
  mean /= 1000;
  for (float v : first) var += (v - mean) * (v - mean);
  EXPECT_NEAR(mean, 0.0, 0.1);
  EXPECT_NEAR(std::sqrt(var / 1000), 1.0, 0.1);
  EXPECT_EQ(stateless_random_normal(rt_, {50}, 9).to_vector(), stateless_random_normal(rt_, {50}, 9).to_vector());
  EXPECT_NE(stateless_random_normal(rt_, {50}, 9).to_vector(), stateless_random_normal(rt_, {50}, 10).to_vector());
  for (float v : stateless_random_uniform(rt_, {500}, 3, 2, 5).to_vector()) {
    ASSERT_GE(v, 2);
    ASSERT_LT(v, 5);
  }
}

TEST_F(OpsTest, PlacementCopiesAndScopes) {
  const Tensor h = random_tensor({3});
  const Tensor d = to_device(h);
  EXPECT_EQ(d.placement(), Placement::kDevice);
  EXPECT_EQ(device_.stats().blocks_in_use.current, 1);
  EXPECT_EQ(to_host(d).to_vector(), h.to_vector());
  try {
    add(h, d);
    FAIL();
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(), "add: inputs are on host and device; copy one with to_host or to_device");
  }
  PlacementScope on_host(Placement::kHost);
  const Tensor sum = add(h, d);  // d is copied to the host first
  EXPECT_EQ(sum.placement(), Placement::kHost);
  expect_near(sum.to_vector(), map2(h.to_vector(), h.to_vector(), [](float x, float y) { return x + y; }));
}

TEST_F(OpsTest, WrapIsZeroCopyAndAllocatesNothing) {
  std::vector<float> host_array = {1, 2, 3, 4};
  const auto before = pool_.stats().allocate_calls;
  const Tensor w = rt_.wrap(host_array.data(), {2, 2});
  EXPECT_EQ(pool_.stats().allocate_calls, before);
  EXPECT_EQ(w.buffer()->data(), host_array.data());
  host_array[0] = 10;
  EXPECT_EQ(w.to_vector()[0], 10);
  EXPECT_EQ(reduce_sum(w).item(), 19);
}

TEST_F(OpsTest, ShapeErrorsNameTheOpAndBothShapes) {
  const auto message = [](auto&& call) {
    try {
      call();
    } catch (const ShapeError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const Tensor a = random_tensor({2, 3}), b = random_tensor({3, 2});
  EXPECT_EQ(message([&] { add(a, b); }),
            "add: shapes [2, 3] and [3, 2] are incompatible (equal shapes or a one-element tensor on either side)");
  EXPECT_EQ(message([&] { matmul(a, a); }), "matmul: shapes [2, 3] and [2, 3] cannot be multiplied (need [m, k] and [k, n])");
  EXPECT_EQ(message([&] { reshape(a, {4, 2}); }), "reshape: cannot reshape [2, 3] (6 elements) to [4, 2]");
  EXPECT_EQ(message([&] { reduce_sum(a, 2); }), "reduce_sum: axis 2 is out of range for shape [2, 3]");
  EXPECT_EQ(message([&] { stack({a, b}); }), "stack: shapes [2, 3] and [3, 2] differ (all inputs must match)");
  EXPECT_EQ(message([&] { concat({a, random_tensor({2, 3, 1})}, 0); }), "concat: shapes [2, 3] and [2, 3, 1] differ in rank or dtype");
  EXPECT_EQ(message([&] { transpose(a, {0, 0}); }), "transpose: permutation does not match shape [2, 3]");
  EXPECT_EQ(message([&] { add(range_int(rt_, 3), range_int(rt_, 3)); }), "add: dtype int32 is not supported (float32 only)");
}

TEST_F(OpsTest, EagerBuffersGoBackWhenTheLastReferenceGoes) {
  {
    const Tensor a = random_tensor({1000});
    Tensor b = square(a);
    EXPECT_EQ(pool_.stats().blocks_in_use.current, 2);
    b = Tensor();
    EXPECT_EQ(pool_.stats().blocks_in_use.current, 1);
  }
  EXPECT_EQ(pool_.stats().blocks_in_use.current, 0);
}

}  // namespace
}  // namespace tleak::runtime
