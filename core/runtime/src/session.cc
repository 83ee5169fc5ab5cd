#include "tleak/runtime/session.h"

#include <cstring>
#include <stdexcept>

#include "tleak/runtime/runtime.h"
#include "tleak/runtime/variable.h"

namespace tleak::runtime {

std::vector<Tensor> Session::run(const std::vector<Tensor>& fetches,
                                 const std::vector<std::pair<Tensor, Tensor>>& feeds) const {
  std::vector<int> nodes;
  for (const Tensor& f : fetches) {
    if (f.graph() != &graph_) throw std::invalid_argument("session.run: a fetch is not a tensor of this session's graph");
    nodes.push_back(f.node());
  }
  std::vector<Tensor> by_placeholder(graph_.placeholder_count());
  for (const auto& [placeholder, value] : feeds) {
    if (placeholder.graph() != &graph_) throw std::invalid_argument("session.run: a feed key is not of this graph");
    const int index = graph_.node(placeholder.node()).placeholder;
    if (index < 0) throw std::invalid_argument("session.run: a feed key is not a placeholder");
    by_placeholder[static_cast<std::size_t>(index)] = value;
  }
  return execute(graph_, nodes, by_placeholder, &variables_);
}

void Session::initialize_variables() {
  // Copied by hand, not with the copy op: in graph mode an op call would add a node to the default
  // graph instead of running.
  Runtime& rt = graph_.runtime();
  for (const auto& variable : graph_.collection()) {
    const Tensor& initial = variable->value;
    rt.begin_op("init_variable");
    Tensor copy = rt.empty(initial.spec(), "session-variable");
    std::memcpy(copy.buffer()->data(), initial.buffer()->data(), initial.buffer()->bytes());
    rt.use(initial);
    rt.use(copy);
    variables_[variable.get()] = std::move(copy);
  }
}

}  // namespace tleak::runtime
