#include "tleak/runtime/tape.h"

#include <algorithm>
#include <stdexcept>
#include <unordered_map>

#include "tleak/runtime/ops.h"
#include "tleak/runtime/runtime.h"

namespace tleak::runtime {

GradientTape::GradientTape(Runtime& rt, bool persistent) : rt_(rt), persistent_(persistent) {
  rt_.active_tapes().push_back(this);
}

GradientTape::~GradientTape() {
  auto& tapes = rt_.active_tapes();
  tapes.erase(std::remove(tapes.begin(), tapes.end(), this), tapes.end());
}

void GradientTape::watch(const Tensor& tensor) { watched_.insert(tensor.id()); }

void GradientTape::record(const detail::OpDef& op, const std::vector<Tensor>& inputs, const detail::Attrs& attrs,
                          const Tensor& output) {
  if (!recording_ || op.grad == nullptr) return;
  const bool relevant = std::any_of(inputs.begin(), inputs.end(), [&](const Tensor& t) { return watching(t.id()); });
  if (!relevant) return;
  std::vector<Tensor> held = inputs;
  if (!op.grad_reads_inputs) {
    for (Tensor& t : held) t = t.shape_only();
  }
  entries_.push_back({&op, std::move(held), attrs, output.id(), op.grad_reads_output ? output : Tensor()});
  watched_.insert(output.id());
}

std::vector<Tensor> GradientTape::gradient(const Tensor& target, const std::vector<Tensor>& sources) {
  if (used_ && !persistent_) {
    throw std::logic_error("gradient() called twice on a non-persistent tape (make it persistent to reuse it)");
  }
  used_ = true;
  recording_ = false;  // gradient ops are not recorded
  std::unordered_map<std::uint64_t, Tensor> grads;
  // d(sum of target)/d(target) is one everywhere.
  grads[target.id()] = fill(rt_, target.shape(), 1.0f);
  for (auto e = entries_.rbegin(); e != entries_.rend(); ++e) {
    const auto found = grads.find(e->output_id);
    if (found == grads.end()) continue;
    const std::vector<Tensor> input_grads = e->op->grad(e->inputs, e->output, found->second, e->attrs);
    for (std::size_t i = 0; i < e->inputs.size() && i < input_grads.size(); ++i) {
      if (!input_grads[i].defined() || !watching(e->inputs[i].id())) continue;
      auto [slot, fresh] = grads.try_emplace(e->inputs[i].id(), input_grads[i]);
      if (!fresh) slot->second = add(slot->second, input_grads[i]);
    }
  }
  std::vector<Tensor> out;
  for (const Tensor& s : sources) {
    const auto found = grads.find(s.id());
    out.push_back(found == grads.end() ? Tensor() : found->second);
  }
  recording_ = true;
  if (!persistent_) entries_.clear();  // the held intermediates go now
  return out;
}

std::vector<Tensor> GradientTape::gradient(const Tensor& target, const std::vector<Variable>& sources) {
  std::vector<Tensor> tensors;
  for (const Variable& v : sources) tensors.push_back(v.state()->value);
  return gradient(target, tensors);
}

}  // namespace tleak::runtime
