// The same functions in eager, traced-graph and JIT mode give the same numbers; tracing caches by
// signature and freezes captures; the older default-graph style with sessions and finalize().
#include <thread>

#include "runtime_fixture.h"

namespace tleak::runtime {
namespace {

using testing::RuntimeTest;

class ModesTest : public RuntimeTest {};

// A small model step: dense layer, activation, elementwise chain, reductions and reshapes.
std::vector<Tensor> model(const std::vector<Tensor>& args, const std::vector<std::int64_t>&) {
  const Tensor& x = args[0];
  const Tensor& w = args[1];
  const Tensor h = relu(matmul(x, w));
  const Tensor z = tanh(add(mul(h, h), exp(neg(h))));
  const Tensor pooled = reduce_mean(z, 0);
  const Tensor flat = reshape(transpose(z), {-1});
  return {pooled, reduce_sum(flat), concat({pooled, pooled}, 0), stack({pooled, pooled}, 1)};
}

TEST_F(ModesTest, AllModesAgreeWithEachOther) {
  const Tensor x = random_tensor({8, 5}), w = random_tensor({5, 6});
  std::vector<std::vector<std::vector<float>>> results;
  for (Mode mode : {Mode::kEager, Mode::kGraph, Mode::kJit}) {
    Function f(rt_, "model", model, mode);
    std::vector<std::vector<float>> outs;
    for (const Tensor& t : f({x, w})) outs.push_back(t.to_vector());
    results.push_back(outs);
  }
  for (std::size_t r = 1; r < results.size(); ++r) {
    ASSERT_EQ(results[r].size(), results[0].size());
    for (std::size_t o = 0; o < results[0].size(); ++o) expect_near(results[r][o], results[0][o], 1e-5f);
  }
}

TEST_F(ModesTest, JitFusesElementwiseChainsAndMatchesEager) {
  const auto chain = [this](const std::vector<Tensor>& a, const std::vector<std::int64_t>&) {
    Tensor t = a[0];
    for (int i = 0; i < 4; ++i) t = tanh(add(mul(t, a[1]), scalar(rt_, 0.5f)));
    return std::vector<Tensor>{t};
  };
  const Tensor x = random_tensor({3000}), y = random_tensor({3000});
  Function eager(rt_, "chain", chain, Mode::kEager), jit(rt_, "chain", chain, Mode::kJit);
  expect_near(jit({x, y})[0].to_vector(), eager({x, y})[0].to_vector(), 1e-6f);
  ASSERT_NE(jit.last_executable(), nullptr);
  EXPECT_EQ(jit.last_executable()->fused_kernel_count(), 1u);
  EXPECT_EQ(jit.last_executable()->fused_op_count(), 12u);
}

TEST_F(ModesTest, TracingCachesOneGraphPerSignature) {
  int body_runs = 0;
  Function f(rt_, "double", [&](const std::vector<Tensor>& a, const std::vector<std::int64_t>&) {
    ++body_runs;
    return std::vector<Tensor>{add(a[0], a[0])};
  }, Mode::kGraph);
  f({random_tensor({4})});
  f({random_tensor({4})});
  EXPECT_EQ(f.cache_size(), 1u);
  EXPECT_EQ(body_runs, 1);  // traced once, executed twice
  f({random_tensor({5})});  // a new shape
  EXPECT_EQ(f.cache_size(), 2u);
  f({random_tensor({4})}, {7});  // a new non-tensor value
  f({random_tensor({4})}, {8});
  f({random_tensor({4})}, {8});
  EXPECT_EQ(f.cache_size(), 4u);
  EXPECT_EQ(f.trace_count(), 4u);
}

TEST_F(ModesTest, CapturedValuesAreFrozenIntoTheTrace) {
  int counter = 0;  // external mutable state, as in a captured Python dict
  Function f(rt_, "increment", [&](const std::vector<Tensor>& a, const std::vector<std::int64_t>&) {
    ++counter;
    return std::vector<Tensor>{add(a[0], scalar(rt_, static_cast<float>(counter)))};
  }, Mode::kGraph);
  const Tensor x = scalar(rt_, 1);
  std::vector<float> outputs;
  for (int i = 0; i < 3; ++i) outputs.push_back(f({x})[0].item());
  EXPECT_EQ(outputs, (std::vector<float>{2, 2, 2}));  // the value at trace time, every call
  EXPECT_EQ(counter, 1);
  Function eager(rt_, "increment", [&](const std::vector<Tensor>& a, const std::vector<std::int64_t>&) {
    ++counter;
    return std::vector<Tensor>{add(a[0], scalar(rt_, static_cast<float>(counter)))};
  }, Mode::kEager);
  EXPECT_EQ(eager({x})[0].item(), 3);
  EXPECT_EQ(eager({x})[0].item(), 4);
}

TEST_F(ModesTest, DefaultGraphSessionFeedsAndFetches) {
  Graph graph(rt_, "tf1");
  Tensor input, output;
  {
    GraphScope scope(graph);
    input = graph.placeholder({{2}, DType::kFloat32, Placement::kHost}, "x");
    output = add(square(input), constant(rt_, {1, 1}, {2}));
  }
  EXPECT_TRUE(output.is_symbolic());
  Session session(graph);
  const auto out = session.run({output}, {{input, constant(rt_, {2, 3}, {2})}});
  EXPECT_EQ(out[0].to_vector(), (std::vector<float>{5, 10}));
  EXPECT_THROW(session.run({output}), std::invalid_argument);  // placeholder not fed
}

TEST_F(ModesTest, FinalizedGraphRefusesNewOpsByName) {
  Graph graph(rt_, "frozen");
  Tensor c;
  {
    GraphScope scope(graph);
    c = constant(rt_, {1, 2}, {2});
  }
  graph.finalize();
  try {
    GraphScope scope(graph);
    square(c);
    FAIL();
  } catch (const GraphFinalizedError& e) {
    EXPECT_STREQ(e.what(), "graph 'frozen' is finalized: cannot add op 'square'");
  }
  EXPECT_EQ(graph.node_count(), 1u);
}

TEST_F(ModesTest, SessionIsSafeToShareBetweenThreads) {
  Graph graph(rt_, "shared");
  Tensor input, output;
  {
    GraphScope scope(graph);
    input = graph.placeholder({{64}, DType::kFloat32, Placement::kHost}, "x");
    output = reduce_sum(mul(input, input));
  }
  graph.finalize();
  Session session(graph);
  std::vector<std::thread> threads;
  std::vector<float> results(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        results[static_cast<std::size_t>(t)] =
            session.run({output}, {{input, fill(rt_, {64}, static_cast<float>(t))}})[0].item();
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 8; ++t) EXPECT_EQ(results[static_cast<std::size_t>(t)], 64.0f * t * t);
}

TEST_F(ModesTest, GraphCollectsTheVariablesItReads) {
  Variable w(rt_, "w", constant(rt_, {1, 2}, {2}));
  Variable b(rt_, "b", constant(rt_, {3, 4}, {2}));
  Graph graph(rt_);
  Tensor y;
  {
    GraphScope scope(graph);
    y = add(w.read(), add(b.read(), w.read()));
  }
  EXPECT_EQ(graph.variables().size(), 2u);
  Session session(graph);
  EXPECT_EQ(session.run({y})[0].to_vector(), (std::vector<float>{5, 8}));
  w.assign(constant(rt_, {10, 20}, {2}));  // variables are read when the graph runs
  EXPECT_EQ(session.run({y})[0].to_vector(), (std::vector<float>{23, 44}));
  EXPECT_EQ(graph.collection_size(), 0u);  // created eagerly: in no collection
}

// A TensorArray loop traces to one node, where a Python-style loop unrolls into one node per step
// and a constant per loop value; both compute the same.
TEST_F(ModesTest, TensorArrayLoopIsOneNodeWithTheUnrolledLoopsValues) {
  const Tensor x = random_tensor({3});
  const auto step = [this](std::int64_t i, std::span<const Tensor> in) { return mul(in[0], scalar(rt_, static_cast<float>(i))); };
  Graph graph(rt_);
  Tensor looped;
  {
    GraphScope scope(graph);
    looped = tensor_array_loop(rt_, 50, {3}, {x}, step);
  }
  EXPECT_EQ(graph.node_count(), 2u);  // x captured as a constant, and the loop
  const Tensor out = Session(graph).run({looped})[0];
  EXPECT_EQ(out.shape(), (Shape{50, 3}));
  std::vector<Tensor> unrolled;
  for (std::int64_t i = 0; i < 50; ++i) unrolled.push_back(step(i, std::span<const Tensor>(&x, 1)));
  expect_near(out.to_vector(), stack(unrolled).to_vector());
  EXPECT_THROW(tensor_array_loop(rt_, 2, {4}, {x}, step), ShapeError);  // a step of the wrong shape
}

}  // namespace
}  // namespace tleak::runtime
