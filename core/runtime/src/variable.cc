#include "tleak/runtime/variable.h"

#include "tleak/runtime/graph.h"
#include "tleak/runtime/ops.h"
#include "tleak/runtime/runtime.h"
#include "tleak/runtime/tape.h"

namespace tleak::runtime {

Variable::Variable(Runtime& rt, std::string name, const Tensor& initial, bool trainable)
    : state_(std::make_shared<VariableState>(VariableState{std::move(name), initial, trainable})) {
  if (initial.is_symbolic()) throw ShapeError("variable '" + state_->name + "': initial value must be concrete");
  rt.variables().add(state_);
}

Tensor Variable::read() const {
  if (Graph* graph = GraphScope::current()) return graph->read_variable(state_);
  if (state_->trainable) {
    for (GradientTape* tape : state_->value.buffer()->runtime().active_tapes()) tape->watch(state_->value);
  }
  return state_->value;
}

void Variable::assign(const Tensor& value) {
  if (value.shape() != state_->value.shape()) {
    throw ShapeError("assign to '" + state_->name + "': shape " + to_string(value.shape()) + " does not match " +
                     to_string(state_->value.shape()));
  }
  state_->value = value;
}

void Variable::assign_sub(const Tensor& delta) { assign(sub(state_->value, delta)); }

void VariableRegistry::add(const std::shared_ptr<VariableState>& state) {
  std::lock_guard lock(mutex_);
  variables_.push_back(state);
}

std::vector<Variable> VariableRegistry::all() const {
  std::lock_guard lock(mutex_);
  return {variables_.begin(), variables_.end()};
}

std::size_t VariableRegistry::size() const {
  std::lock_guard lock(mutex_);
  return variables_.size();
}

void VariableRegistry::clear() {
  std::vector<std::shared_ptr<VariableState>> dropped;
  {
    std::lock_guard lock(mutex_);
    dropped.swap(variables_);
  }
}

}  // namespace tleak::runtime
