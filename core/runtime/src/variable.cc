#include "tleak/runtime/variable.h"

#include "tleak/runtime/graph.h"
#include "tleak/runtime/ops.h"
#include "tleak/runtime/runtime.h"
#include "tleak/runtime/tape.h"

namespace tleak::runtime {

// `rt` stays in the signature (every caller has one), though a variable now needs only its value's.
Variable::Variable([[maybe_unused]] Runtime& rt, std::string name, const Tensor& initial, bool trainable)
    : state_(std::make_shared<VariableState>(VariableState{std::move(name), initial, trainable})) {
  Graph* graph = GraphScope::current();
  if (initial.is_symbolic()) {
    if (graph == nullptr || initial.graph() != graph) {
      throw ShapeError("variable '" + state_->name + "': a symbolic initial value must belong to the default graph");
    }
    state_->value = execute(*graph, {initial.node()}, {})[0];  // the initializer, run once
  }
  if (graph != nullptr) graph->add_to_collection(state_);
}

Tensor Variable::read() const {
  if (Graph* graph = GraphScope::current()) return graph->read_variable(state_);
  if (state_->trainable) {
    for (GradientTape* tape : state_->value.buffer()->runtime().active_tapes()) tape->watch(state_->value);
  }
  return state_->value;
}

void Variable::assign(const Tensor& value) {
  if (value.is_symbolic()) throw ShapeError("assign to '" + state_->name + "': graph-mode assignment is not modelled; assign a value");
  if (value.shape() != state_->value.shape()) {
    throw ShapeError("assign to '" + state_->name + "': shape " + to_string(value.shape()) + " does not match " +
                     to_string(state_->value.shape()));
  }
  state_->value = value;
}

void Variable::assign_sub(const Tensor& delta) { assign(sub(state_->value, delta)); }

}  // namespace tleak::runtime
