// The semantics the scenarios rely on, pinned the way the real frameworks behave: TF2 eager frees a
// variable or tensor with its last reference and keeps no collection; TF1 graph mode has one
// process default graph, shared by threads without a graph of their own, whose variables
// collection and constants live until reset_default_graph(); XLA temporaries live for one
// execution.
#include <algorithm>
#include <thread>

#include "runtime_fixture.h"

namespace tleak::runtime {
namespace {

using testing::RuntimeTest;

class FrameworkSemanticsTest : public RuntimeTest {};

TEST_F(FrameworkSemanticsTest, EagerVariableIsFreedWhenItsLastHandleIsRebound) {
  const auto before = pool_.stats().bytes_in_use.current;
  Variable var;
  for (int i = 0; i < 10; ++i) var = Variable(rt_, "var", fill(rt_, {100, 100}, 1.0f));
  EXPECT_EQ(pool_.stats().bytes_in_use.current - before, 100 * 100 * 4);  // the last one only
  var = Variable();
  EXPECT_EQ(pool_.stats().bytes_in_use.current, before);
}

TEST_F(FrameworkSemanticsTest, GraphModeVariablesStayInTheDefaultGraphsCollectionUntilReset) {
  rt_.disable_eager_execution();
  const auto before = pool_.stats().bytes_in_use.current;
  for (int i = 0; i < 5; ++i) {
    Variable var(rt_, "var", fill(rt_, {100, 100}, 1.0f));  // symbolic initial value: run once
    EXPECT_EQ(var.state()->value.to_vector()[0], 1.0f);
  }
  EXPECT_EQ(rt_.default_graph().collection_size(), 5u);
  EXPECT_GE(pool_.stats().bytes_in_use.current - before, 5 * 100 * 100 * 4);
  rt_.reset_default_graph();
  EXPECT_EQ(rt_.default_graph().collection_size(), 0u);
  EXPECT_EQ(pool_.stats().bytes_in_use.current, before);
}

TEST_F(FrameworkSemanticsTest, ANewThreadBuildsInTheProcessDefaultGraphNotItsParentsScope) {
  rt_.disable_eager_execution();
  Graph serving(rt_, "serving");
  Tensor in_serving, in_thread;
  {
    GraphScope scope(serving);
    in_serving = fill(rt_, {2}, 1.0f);
    std::thread([&] { in_thread = random_normal(rt_, {1, 5}); }).join();
  }
  EXPECT_EQ(in_serving.graph(), &serving);
  EXPECT_EQ(in_thread.graph(), &rt_.default_graph());
  // A session of one graph cannot evaluate another graph's tensor.
  EXPECT_THROW(Session(serving).run({in_thread}), std::invalid_argument);
}

// Stateful random ops from many threads at once: one generator, and every draw its own numbers.
TEST_F(FrameworkSemanticsTest, StatefulRandomOpsAreSafeFromManyThreads) {
  const auto before = pool_.stats().blocks_in_use.current;
  std::vector<std::vector<float>> draws(8);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < draws.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const std::vector<float> v = random_normal(rt_, {4}).to_vector();
        draws[t].insert(draws[t].end(), v.begin(), v.end());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::vector<float> all;
  for (const auto& d : draws) all.insert(all.end(), d.begin(), d.end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end());  // no draw handed out twice
  EXPECT_EQ(pool_.stats().blocks_in_use.current - before, 1);       // one generator's state
}

TEST_F(FrameworkSemanticsTest, EagerModeHasNoDefaultGraph) {
  EXPECT_EQ(GraphScope::current(), nullptr);
  EXPECT_THROW(rt_.default_graph(), std::logic_error);
  EXPECT_THROW(rt_.reset_default_graph(), std::logic_error);
  EXPECT_FALSE(fill(rt_, {2}, 1.0f).is_symbolic());
}

TEST_F(FrameworkSemanticsTest, TheDefaultGraphGoesWithItsRuntime) {
  {
    PoolAllocator pool;
    Runtime rt(pool, device_);
    rt.disable_eager_execution();
    constant(rt, {1, 2, 3}, {3});
    EXPECT_EQ(rt.default_graph().constant_bytes(), 12u);
  }
  EXPECT_EQ(GraphScope::current(), nullptr);
}

}  // namespace
}  // namespace tleak::runtime
