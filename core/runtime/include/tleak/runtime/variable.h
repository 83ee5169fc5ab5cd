// Variables: named, mutable tensors. A VariableRegistry tracks them the way a module or a global
// variables collection does: a registered variable lives as long as the registry holds it.
#pragma once

#include <memory>
#include <mutex>
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
  // Registers with `rt.variables()` unless `registry` is given (or is null: untracked).
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

class VariableRegistry {
 public:
  void add(const std::shared_ptr<VariableState>& state);
  std::vector<Variable> all() const;
  std::size_t size() const;
  // Drops the registry's references; variables nobody else holds are freed.
  void clear();

 private:
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<VariableState>> variables_;
};

}  // namespace tleak::runtime
