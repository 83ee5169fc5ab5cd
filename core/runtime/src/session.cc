#include "tleak/runtime/session.h"

#include <stdexcept>

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
  return execute(graph_, nodes, by_placeholder);
}

}  // namespace tleak::runtime
