// The older graph style's session: runs fetches of a graph with feeds for its placeholders. Runs
// may come from several threads at once; each run has its own execution state and the graph is
// only read. A graph that keeps gaining nodes keeps costing more per run: finalize() it. As in TF1,
// a session that initializes the variables holds its own copy of them: N sessions, N copies.
#pragma once

#include <utility>
#include <vector>

#include "tleak/runtime/graph.h"

namespace tleak::runtime {

class Session {
 public:
  explicit Session(Graph& graph) : graph_(graph) {}
  // `fetches` and the first of each feed pair are symbolic tensors of this graph; a feed's second is
  // the concrete value for that placeholder. Throws std::invalid_argument for foreign tensors.
  std::vector<Tensor> run(const std::vector<Tensor>& fetches,
                          const std::vector<std::pair<Tensor, Tensor>>& feeds = {}) const;
  Graph& graph() const { return graph_; }
  // sess.run(tf.global_variables_initializer()): a copy of every variable in the graph's collection,
  // owned by this session, which its runs read. Without it, runs read the variables' own values.
  // Call before the session runs from several threads.
  void initialize_variables();

 private:
  Graph& graph_;
  VariableValues variables_;
};

}  // namespace tleak::runtime
