#include "tleak/runtime/function.h"

#include "tleak/runtime/runtime.h"

namespace tleak::runtime {

const char* to_string(Mode mode) {
  switch (mode) {
    case Mode::kEager: return "eager";
    case Mode::kGraph: return "graph";
    case Mode::kJit: return "jit";
  }
  return "eager";
}

Function::Function(Runtime& rt, std::string name, Body body, Mode mode, JitOptions jit)
    : rt_(rt), name_(std::move(name)), body_(std::move(body)), mode_(mode), jit_(jit) {}

Function::~Function() = default;

std::string Function::signature(const std::vector<Tensor>& args, const std::vector<std::int64_t>& statics) const {
  std::string key;
  for (const Tensor& t : args) {
    key += std::string(to_string(t.dtype())) + "@" + to_string(t.placement()) + to_string(t.shape()) + ";";
  }
  key += "|";
  for (std::int64_t s : statics) key += std::to_string(s) + ",";
  return key;
}

std::unique_ptr<Function::Concrete> Function::trace(const std::vector<Tensor>& args,
                                                    const std::vector<std::int64_t>& statics) {
  auto concrete = std::make_unique<Concrete>();
  concrete->graph = std::make_unique<Graph>(rt_, name_);
  Graph& graph = *concrete->graph;
  {
    GraphScope scope(graph);
    std::vector<Tensor> placeholders;
    for (std::size_t i = 0; i < args.size(); ++i) {
      placeholders.push_back(graph.placeholder(args[i].spec(), name_ + ":arg" + std::to_string(i)));
    }
    for (const Tensor& out : body_(placeholders, statics)) {
      // An output the body did not compute (a captured value) is a constant of the trace.
      concrete->outputs.push_back((out.is_symbolic() ? out : graph.add_constant(out)).node());
    }
  }
  graph.finalize();
  ++traces_;
  if (mode_ == Mode::kJit) concrete->executable = std::make_unique<Executable>(graph, concrete->outputs, jit_);
  return concrete;
}

std::vector<Tensor> Function::operator()(const std::vector<Tensor>& args, const std::vector<std::int64_t>& statics) {
  if (mode_ == Mode::kEager) return body_(args, statics);
  const std::string key = signature(args, statics);
  auto it = cache_.find(key);
  if (it == cache_.end()) it = cache_.emplace(key, trace(args, statics)).first;
  last_ = it->second.get();
  if (mode_ == Mode::kJit) return last_->executable->run(args);
  return execute(*last_->graph, last_->outputs, args);
}

void Function::clear_cache() {
  last_ = nullptr;
  cache_.clear();
}

}  // namespace tleak::runtime
