// Graphs: the traced-graph mode and the older default-graph style. A graph is a list of nodes in
// the order they were added (which is a valid execution order). Op calls append nodes when their
// inputs are symbolic or a GraphScope makes a graph the default; constants own their data, and
// concrete tensors used as inputs are captured as constants (frozen at the value they had).
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "tleak/runtime/detail/op_def.h"
#include "tleak/runtime/tensor.h"

namespace tleak::runtime {

struct VariableState;
class Variable;

class GraphFinalizedError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

struct Node {
  const detail::OpDef* op = nullptr;  // null for placeholders and variable reads
  std::vector<int> inputs;
  detail::Attrs attrs;  // for constants, attrs.value holds the data
  TensorSpec spec;
  int placeholder = -1;
  std::shared_ptr<VariableState> variable;
  std::string name;
};

class Graph {
 public:
  explicit Graph(Runtime& rt, std::string name = "graph");
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  Runtime& runtime() const { return *rt_; }
  const std::string& name() const { return name_; }

  Tensor placeholder(TensorSpec spec, std::string name = "");
  // Throws GraphFinalizedError naming the op once finalize() was called.
  Tensor add_node(Node node);
  // A Const node holding `value` (which keeps its bytes alive as long as the graph lives).
  Tensor add_constant(const Tensor& value);
  Tensor read_variable(const std::shared_ptr<VariableState>& variable);

  // After this, adding any node is an error: the fix for graphs that grow in a loop.
  void finalize();
  bool finalized() const;

  std::size_t node_count() const;
  Node node(int index) const;  // a copy, safe while other threads run the graph
  std::vector<Node> nodes() const;
  std::size_t placeholder_count() const;
  int placeholder_node(std::size_t index) const;
  // Bytes held by this graph's constants.
  std::size_t constant_bytes() const;
  // Every variable a node of this graph reads, once each.
  std::vector<Variable> variables() const;
  // TF1's global variables collection: variables created while this graph was the default. The
  // graph holds them (and their values) for as long as it lives.
  void add_to_collection(std::shared_ptr<VariableState> variable);
  std::size_t collection_size() const;
  std::vector<std::shared_ptr<VariableState>> collection() const;

 private:
  Runtime* rt_;
  std::string name_;
  mutable std::shared_mutex mutex_;
  std::vector<Node> nodes_;
  std::vector<int> placeholders_;
  std::vector<std::shared_ptr<VariableState>> collection_;
  bool finalized_ = false;
};

// Makes `graph` the default graph of this thread for the scope: op calls append to it. Outside any
// scope, a thread's default graph is the process's (Runtime::disable_eager_execution), or none.
class GraphScope {
 public:
  explicit GraphScope(Graph& graph);
  ~GraphScope();
  GraphScope(const GraphScope&) = delete;
  GraphScope& operator=(const GraphScope&) = delete;
  static Graph* current();
  // The graph threads fall back to when they have no scope of their own (null: eager).
  static void set_process_default(Graph* graph);
  static Graph* process_default();

 private:
  Graph* previous_;
};

// A session's own values of variables (TF1: variables live in the session that initialized them).
using VariableValues = std::unordered_map<const VariableState*, Tensor>;

// Runs the nodes `fetches` depend on, with `feeds` for placeholders (by placeholder index), and
// returns the fetched values. Each intermediate is freed as soon as its last consumer has run.
// Variables read `session_values` where it has them, else their own value.
std::vector<Tensor> execute(const Graph& graph, const std::vector<int>& fetches, const std::vector<Tensor>& feeds,
                            const VariableValues* session_values = nullptr);

}  // namespace tleak::runtime
