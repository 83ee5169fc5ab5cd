// Reverse-mode gradients of eager ops. While a tape is alive it records every op one of whose
// inputs it watches (watched tensors, trainable variables read, and what recorded ops produce),
// holding those inputs (and the outputs a gradient reads) until the gradient is taken. A non-persistent tape lets them go
// after its one gradient() call; a persistent one keeps them until it is destroyed.
#pragma once

#include <cstdint>
#include <unordered_set>
#include <vector>

#include "tleak/runtime/detail/op_def.h"
#include "tleak/runtime/tensor.h"
#include "tleak/runtime/variable.h"

namespace tleak::runtime {

class GradientTape {
 public:
  explicit GradientTape(Runtime& rt, bool persistent = false);
  ~GradientTape();
  GradientTape(const GradientTape&) = delete;
  GradientTape& operator=(const GradientTape&) = delete;

  void watch(const Tensor& tensor);
  // d target / d source for each source (target reduced to a sum if it has many elements). A source
  // the target does not depend on gets an undefined Tensor. Throws std::logic_error when a
  // non-persistent tape is asked a second time.
  std::vector<Tensor> gradient(const Tensor& target, const std::vector<Tensor>& sources);
  std::vector<Tensor> gradient(const Tensor& target, const std::vector<Variable>& sources);

  bool persistent() const { return persistent_; }
  std::size_t recorded_ops() const { return entries_.size(); }

  // Called by op dispatch for every eager op while this tape is active.
  void record(const detail::OpDef& op, const std::vector<Tensor>& inputs, const detail::Attrs& attrs,
              const Tensor& output);
  bool watching(std::uint64_t id) const { return watched_.contains(id); }

 private:
  struct Entry {
    const detail::OpDef* op;
    std::vector<Tensor> inputs;
    detail::Attrs attrs;
    std::uint64_t output_id;
    Tensor output;  // held only when the gradient reads it (OpDef::grad_reads_output)
  };
  Runtime& rt_;
  bool persistent_;
  bool used_ = false;
  bool recording_ = true;
  std::unordered_set<std::uint64_t> watched_;
  std::vector<Entry> entries_;
};

}  // namespace tleak::runtime
