#include "tleak/runtime/graph.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>

#include "tleak/runtime/runtime.h"
#include "tleak/runtime/variable.h"

namespace tleak::runtime {
namespace {

thread_local Graph* t_default_graph = nullptr;
// Shared by every thread, as TF1's global default graph is; the per-thread stack comes first.
std::atomic<Graph*> g_process_default_graph{nullptr};

}  // namespace

Graph::Graph(Runtime& rt, std::string name) : rt_(&rt), name_(std::move(name)) {}
Graph::~Graph() = default;

Tensor Graph::add_node(Node node) {
  std::unique_lock lock(mutex_);
  if (finalized_) {
    const std::string what = node.op != nullptr ? node.op->name : (node.variable ? "read_variable" : "placeholder");
    throw GraphFinalizedError("graph '" + name_ + "' is finalized: cannot add op '" + what + "'");
  }
  for (int input : node.inputs) {
    if (input < 0 || input >= static_cast<int>(nodes_.size())) throw std::logic_error("node input out of range");
  }
  const TensorSpec spec = node.spec;
  nodes_.push_back(std::move(node));
  const int index = static_cast<int>(nodes_.size() - 1);
  if (nodes_.back().placeholder >= 0) placeholders_.push_back(index);
  return Tensor::symbolic(spec, *this, index);
}

Tensor Graph::placeholder(TensorSpec spec, std::string name) {
  Node node;
  node.spec = std::move(spec);
  node.name = std::move(name);
  {
    std::shared_lock lock(mutex_);
    node.placeholder = static_cast<int>(placeholders_.size());
  }
  return add_node(std::move(node));
}

Tensor Graph::add_constant(const Tensor& value) {
  Node node;
  node.op = &detail::op("constant");
  node.attrs.value = value;
  node.spec = value.spec();
  return add_node(std::move(node));
}

Tensor Graph::read_variable(const std::shared_ptr<VariableState>& variable) {
  Node node;
  node.variable = variable;
  node.spec = variable->value.spec();
  node.name = variable->name;
  return add_node(std::move(node));
}

void Graph::finalize() {
  std::unique_lock lock(mutex_);
  finalized_ = true;
}

bool Graph::finalized() const {
  std::shared_lock lock(mutex_);
  return finalized_;
}

std::size_t Graph::node_count() const {
  std::shared_lock lock(mutex_);
  return nodes_.size();
}

Node Graph::node(int index) const {
  std::shared_lock lock(mutex_);
  return nodes_.at(static_cast<std::size_t>(index));
}

std::vector<Node> Graph::nodes() const {
  std::shared_lock lock(mutex_);
  return nodes_;
}

std::size_t Graph::placeholder_count() const {
  std::shared_lock lock(mutex_);
  return placeholders_.size();
}

int Graph::placeholder_node(std::size_t index) const {
  std::shared_lock lock(mutex_);
  return placeholders_.at(index);
}

std::size_t Graph::constant_bytes() const {
  std::shared_lock lock(mutex_);
  std::size_t bytes = 0;
  for (const Node& n : nodes_) {
    if (n.op != nullptr && n.op->produces_constant) bytes += n.attrs.value.buffer()->bytes();
  }
  return bytes;
}

std::vector<Variable> Graph::variables() const {
  std::shared_lock lock(mutex_);
  std::vector<Variable> out;
  std::set<const VariableState*> seen;
  for (const Node& n : nodes_) {
    if (n.variable && seen.insert(n.variable.get()).second) out.emplace_back(n.variable);
  }
  return out;
}

void Graph::add_to_collection(std::shared_ptr<VariableState> variable) {
  std::unique_lock lock(mutex_);
  collection_.push_back(std::move(variable));
}

std::vector<std::shared_ptr<VariableState>> Graph::collection() const {
  std::shared_lock lock(mutex_);
  return collection_;
}

std::size_t Graph::collection_size() const {
  std::shared_lock lock(mutex_);
  return collection_.size();
}

GraphScope::GraphScope(Graph& graph) : previous_(t_default_graph) { t_default_graph = &graph; }
GraphScope::~GraphScope() { t_default_graph = previous_; }
Graph* GraphScope::current() { return t_default_graph != nullptr ? t_default_graph : g_process_default_graph.load(); }
void GraphScope::set_process_default(Graph* graph) { g_process_default_graph.store(graph); }
Graph* GraphScope::process_default() { return g_process_default_graph.load(); }

std::vector<Tensor> execute(const Graph& graph, const std::vector<int>& fetches, const std::vector<Tensor>& feeds,
                            const VariableValues* session_values) {
  const std::vector<Node> nodes = graph.nodes();
  Runtime& rt = graph.runtime();
  // Which nodes the fetches need, and how many needed nodes consume each one.
  std::vector<char> needed(nodes.size(), 0);
  std::vector<int> stack(fetches.begin(), fetches.end());
  while (!stack.empty()) {
    const int n = stack.back();
    stack.pop_back();
    if (n < 0 || n >= static_cast<int>(nodes.size())) throw std::invalid_argument("fetch of a node not in the graph");
    if (needed[static_cast<std::size_t>(n)]) continue;
    needed[static_cast<std::size_t>(n)] = 1;
    for (int input : nodes[static_cast<std::size_t>(n)].inputs) stack.push_back(input);
  }
  std::vector<int> consumers(nodes.size(), 0);
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    if (!needed[n]) continue;
    for (int input : nodes[n].inputs) ++consumers[static_cast<std::size_t>(input)];
  }
  for (int f : fetches) ++consumers[static_cast<std::size_t>(f)];  // fetched values outlive the run

  std::vector<Tensor> values(nodes.size());
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    if (!needed[n]) continue;
    const Node& node = nodes[n];
    if (node.placeholder >= 0) {
      if (static_cast<std::size_t>(node.placeholder) >= feeds.size() || !feeds[static_cast<std::size_t>(node.placeholder)].defined()) {
        throw std::invalid_argument("placeholder '" + node.name + "' was not fed");
      }
      const Tensor& fed = feeds[static_cast<std::size_t>(node.placeholder)];
      if (fed.shape() != node.spec.shape || fed.dtype() != node.spec.dtype) {
        throw ShapeError("feed for placeholder '" + node.name + "': shape " + to_string(fed.shape()) +
                         " does not match " + to_string(node.spec.shape));
      }
      values[n] = fed;
    } else if (node.variable) {
      const auto own = session_values != nullptr ? session_values->find(node.variable.get()) : VariableValues::const_iterator();
      values[n] = session_values != nullptr && own != session_values->end() ? own->second : node.variable->value;
      rt.use(values[n]);
    } else if (node.op->produces_constant) {
      values[n] = node.attrs.value;
    } else {
      std::vector<Tensor> inputs;
      for (int input : node.inputs) inputs.push_back(values[static_cast<std::size_t>(input)]);
      rt.begin_op(node.op->name);
      Tensor out = std::string_view(node.op->name) == "reshape" ? inputs[0].with_shape(node.spec.shape) : rt.empty(node.spec);
      if (std::string_view(node.op->name) != "reshape") node.op->kernel(rt, inputs, node.attrs, out);
      for (const Tensor& t : inputs) rt.use(t);
      rt.use(out);
      values[n] = std::move(out);
      // Free each input whose last consumer this was.
      for (int input : node.inputs) {
        if (--consumers[static_cast<std::size_t>(input)] == 0) values[static_cast<std::size_t>(input)] = Tensor();
      }
    }
  }
  std::vector<Tensor> out;
  for (int f : fetches) out.push_back(values[static_cast<std::size_t>(f)]);
  return out;
}

}  // namespace tleak::runtime
