// Variables: named, mutable tensors. An eager variable is held only by its handles, as TF2's are
// (rebinding the last handle frees it). A variable created while a graph is the default joins that
// graph's variables collection, as TF1's global variables do, and lives as long as the graph.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tleak/runtime/tensor.h"

namespace tleak::runtime {

struct VariableState {
  std::string name;
  Tensor value;
  bool trainable = true;
};

class Variable {
 public:
  Variable() = default;
  // Under a default graph, `initial` may be symbolic: it is evaluated at once (the variable's
  // initializer) and the variable joins the graph's collection.
  Variable(Runtime& rt, std::string name, const Tensor& initial, bool trainable = true);
  explicit Variable(std::shared_ptr<VariableState> state) : state_(std::move(state)) {}

  const std::string& name() const { return state_->name; }
  // The current value; in a graph under construction, a node that reads it at run time. Gradient
  // tapes watch trainable variables that are read while they record.
  Tensor read() const;
  void assign(const Tensor& value);
  void assign_sub(const Tensor& delta);
  const std::shared_ptr<VariableState>& state() const { return state_; }
  bool operator==(const Variable& other) const { return state_ == other.state_; }

 private:
  std::shared_ptr<VariableState> state_;
};

}  // namespace tleak::runtime
