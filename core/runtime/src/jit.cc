#include "tleak/runtime/jit.h"

#include "fused_code.h"

#include <algorithm>
#include <map>

#include "tleak/runtime/runtime.h"
#include "tleak/runtime/variable.h"

namespace tleak::runtime {
namespace {

constexpr std::size_t kAlign = 64;

std::size_t bytes_of(const TensorSpec& spec) {
  const auto n = static_cast<std::size_t>(num_elements(spec.shape)) * dtype_size(spec.dtype);
  return (std::max<std::size_t>(n, 1) + kAlign - 1) / kAlign * kAlign;
}

bool elementwise(const Node& node) {
  if (node.op == nullptr || (node.op->unary_tile == nullptr && node.op->binary_tile == nullptr)) return false;
  return node.spec.dtype == DType::kFloat32;
}

// First-fit offsets in an arena, merging freed neighbours: liveness-based reuse.
class OffsetAllocator {
 public:
  std::size_t allocate(std::size_t size) {
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second < size) continue;
      const std::size_t offset = it->first;
      const std::size_t left = it->second - size;
      free_.erase(it);
      if (left > 0) free_[offset + size] = left;
      return offset;
    }
    const std::size_t offset = end_;
    end_ += size;
    return offset;
  }
  void release(std::size_t offset, std::size_t size) {
    auto it = free_.emplace(offset, size).first;
    if (auto next = std::next(it); next != free_.end() && it->first + it->second == next->first) {
      it->second += next->second;
      free_.erase(next);
    }
    if (it != free_.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) {
        prev->second += it->second;
        free_.erase(it);
      }
    }
  }
  std::size_t high_water() const { return end_; }

 private:
  std::map<std::size_t, std::size_t> free_;
  std::size_t end_ = 0;
};

}  // namespace

Executable::Executable(const Graph& graph, const std::vector<int>& outputs, JitOptions options)
    : rt_(graph.runtime()), options_(options), nodes_(graph.nodes()), outputs_(outputs) {
  const std::size_t n = nodes_.size();
  std::vector<char> needed(n, 0);
  std::vector<int> pending(outputs.begin(), outputs.end());
  while (!pending.empty()) {
    const int node = pending.back();
    pending.pop_back();
    if (needed[static_cast<std::size_t>(node)]) continue;
    needed[static_cast<std::size_t>(node)] = 1;
    for (int input : nodes_[static_cast<std::size_t>(node)].inputs) pending.push_back(input);
  }
  std::vector<int> consumers(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    if (!needed[i]) continue;
    for (int input : nodes_[i].inputs) ++consumers[static_cast<std::size_t>(input)];
  }
  std::vector<char> is_output(n, 0);
  for (int o : outputs) is_output[static_cast<std::size_t>(o)] = 1;

  // Fusion: an elementwise node joins the group of an elementwise input of the same shape whose
  // only consumer it is; that input's value then never materializes.
  std::vector<int> group_of(n, -1);
  std::vector<std::vector<int>> groups;
  for (std::size_t i = 0; i < n; ++i) {
    const Node& node = nodes_[i];
    if (!needed[i] || node.op == nullptr || node.op->produces_constant) continue;
    if (elementwise(node)) {
      int joined = -1;
      for (int input : node.inputs) {
        const auto in = static_cast<std::size_t>(input);
        if (group_of[in] >= 0 && consumers[in] == 1 && !is_output[in] && elementwise(nodes_[in]) &&
            nodes_[in].spec.shape == node.spec.shape && nodes_[in].spec.placement == node.spec.placement) {
          joined = group_of[in];
          break;
        }
      }
      if (joined < 0) {
        joined = static_cast<int>(groups.size());
        groups.emplace_back();
      }
      group_of[i] = joined;
      groups[static_cast<std::size_t>(joined)].push_back(static_cast<int>(i));
    }
  }
  // Steps in node order; a group runs where its last member stands, when all its inputs exist.
  for (std::size_t i = 0; i < n; ++i) {
    const Node& node = nodes_[i];
    if (!needed[i] || node.op == nullptr || node.op->produces_constant) continue;
    if (group_of[i] < 0) {
      steps_.push_back({static_cast<int>(i), node.op, node.inputs, {}, nullptr, node.op->name});
      continue;
    }
    const auto& members = groups[static_cast<std::size_t>(group_of[i])];
    if (members.back() != static_cast<int>(i)) continue;
    Step step;
    step.node = static_cast<int>(i);
    std::map<int, int> instruction_of;  // member node -> its instruction
    auto& code = step.program.instructions;
    for (int member : members) {
      const Node& m = nodes_[static_cast<std::size_t>(member)];
      detail::FusedInstruction instruction{m.op, {}, {}, -1};
      for (std::size_t k = 0; k < m.inputs.size(); ++k) {
        const int input = m.inputs[k];
        detail::FusedOperand operand;
        if (const auto r = instruction_of.find(input); r != instruction_of.end()) {
          operand = {false, r->second};
        } else {
          auto pos = std::find(step.inputs.begin(), step.inputs.end(), input);
          if (pos == step.inputs.end()) pos = step.inputs.insert(step.inputs.end(), input);
          operand = {true, static_cast<int>(pos - step.inputs.begin())};
        }
        (k == 0 ? instruction.x : instruction.y) = operand;
      }
      instruction_of[member] = static_cast<int>(code.size());
      code.push_back(instruction);
      step.name += (step.name.empty() ? "fused:" : "+") + std::string(m.op->name);
    }
    // Shapes are fixed per executable, so which inputs are one repeated value is known now.
    const std::int64_t n_out = num_elements(node.spec.shape);
    for (int input : step.inputs) {
      step.program.scalar_input.push_back(num_elements(nodes_[static_cast<std::size_t>(input)].spec.shape) == 1 && n_out != 1);
    }
    detail::assign_registers(step.program);
    if (options_.generate_code) step.code = detail::FusedCode::generate(step.program, n_out);
    steps_.push_back(std::move(step));
  }
  plan_storage(outputs);
}

Executable::~Executable() = default;

void Executable::plan_storage(const std::vector<int>& outputs) {
  slots_.assign(nodes_.size(), {});
  std::vector<int> last_use(nodes_.size(), -1);
  for (std::size_t s = 0; s < steps_.size(); ++s) {
    for (int input : steps_[s].inputs) last_use[static_cast<std::size_t>(input)] = static_cast<int>(s);
  }
  std::vector<char> is_output(nodes_.size(), 0);
  for (int o : outputs) is_output[static_cast<std::size_t>(o)] = 1;

  OffsetAllocator arenas[2];
  std::vector<std::vector<int>> dies_after(steps_.size());
  for (std::size_t s = 0; s < steps_.size(); ++s) {
    const int node = steps_[s].node;
    const auto idx = static_cast<std::size_t>(node);
    if (is_output[idx]) continue;  // outputs outlive the run: their own buffers
    Slot& slot = slots_[idx];
    slot.temp = true;
    slot.placement = nodes_[idx].spec.placement;
    slot.offset = arenas[static_cast<int>(slot.placement)].allocate(bytes_of(nodes_[idx].spec));
    if (last_use[idx] >= 0) dies_after[static_cast<std::size_t>(last_use[idx])].push_back(node);
    // Space of temps whose last reader was this step is free for the steps after it.
    for (int dead : dies_after[s]) {
      const Slot& d = slots_[static_cast<std::size_t>(dead)];
      arenas[static_cast<int>(d.placement)].release(d.offset, bytes_of(nodes_[static_cast<std::size_t>(dead)].spec));
    }
  }
  for (int p = 0; p < 2; ++p) arena_size_[p] = arenas[p].high_water();
}

void Executable::run_fused(const Step& step, std::span<const Tensor> in, const Tensor& out) const {
  const std::int64_t n = out.size();
  std::vector<const float*> inputs;
  for (const Tensor& t : in) inputs.push_back(static_cast<const float*>(t.buffer()->data()));
  float* result = static_cast<float*>(out.buffer()->data());
  std::int64_t done = 0;
  if (step.code) {
    done = n / detail::FusedCode::kLanes * detail::FusedCode::kLanes;
    step.code->run(inputs.data(), result, done);
  }
  detail::interpret(step.program, inputs.data(), result, done, n);  // the tail, or all of it
}

std::vector<Tensor> Executable::run(const std::vector<Tensor>& inputs) {
  // This execution's temporaries: freed when it completes (on return, with `values`).
  std::shared_ptr<Buffer> arena[2];
  for (int p = 0; p < 2; ++p) {
    if (arena_size_[p] > 0) arena[p] = rt_.allocate(arena_size_[p], static_cast<Placement>(p), "jit-temps");
  }
  std::vector<Tensor> values(nodes_.size());
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const Node& node = nodes_[i];
    if (node.placeholder >= 0) {
      if (static_cast<std::size_t>(node.placeholder) >= inputs.size()) throw std::invalid_argument("missing input");
      values[i] = inputs[static_cast<std::size_t>(node.placeholder)];
      if (values[i].shape() != node.spec.shape) {
        throw ShapeError("executable compiled for " + to_string(node.spec.shape) + " got input " +
                         to_string(values[i].shape()));
      }
    } else if (node.variable) {
      values[i] = node.variable->value;
    } else if (node.op != nullptr && node.op->produces_constant) {
      values[i] = node.attrs.value;
    }
  }
  for (const Step& step : steps_) {
    const auto idx = static_cast<std::size_t>(step.node);
    const Node& node = nodes_[idx];
    const Slot& slot = slots_[idx];
    Tensor out;
    if (slot.temp) {
      const auto& temps = arena[static_cast<int>(slot.placement)];
      auto view = std::make_shared<Buffer>(rt_, nullptr, static_cast<char*>(temps->data()) + slot.offset,
                                           bytes_of(node.spec), slot.placement);
      view->set_tracked_block(temps->owner(), temps->data());
      out = Tensor::concrete(node.spec, std::move(view));
    } else {
      out = rt_.empty(node.spec, "jit-output");
    }
    rt_.begin_op(step.name);
    std::vector<Tensor> in;
    for (int input : step.inputs) in.push_back(values[static_cast<std::size_t>(input)]);
    if (step.program.instructions.empty()) {
      step.op->kernel(rt_, in, node.attrs, out);
    } else {
      run_fused(step, in, out);
    }
    for (const Tensor& t : in) rt_.use(t);
    rt_.use(out);
    values[idx] = std::move(out);
  }
  std::vector<Tensor> results;
  for (int o : outputs_) results.push_back(values[static_cast<std::size_t>(o)]);
  return results;
}

std::size_t Executable::arena_bytes(Placement placement) const { return arena_size_[static_cast<int>(placement)]; }

std::size_t Executable::fused_kernel_count() const {
  return static_cast<std::size_t>(std::count_if(steps_.begin(), steps_.end(), [](const Step& s) { return !s.program.instructions.empty(); }));
}

std::size_t Executable::fused_op_count() const {
  std::size_t ops = 0;
  for (const Step& s : steps_) ops += s.program.instructions.size();
  return ops;
}

std::size_t Executable::generated_kernel_count() const {
  return static_cast<std::size_t>(std::count_if(steps_.begin(), steps_.end(), [](const Step& s) { return s.code != nullptr; }));
}

std::size_t Executable::temp_count() const {
  return static_cast<std::size_t>(std::count_if(slots_.begin(), slots_.end(), [](const Slot& s) { return s.temp; }));
}

}  // namespace tleak::runtime
