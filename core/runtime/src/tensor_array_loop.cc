// tensor_array_loop: a symbolic loop writing a TensorArray. Its kernel runs the step eagerly once
// per element (in whatever mode the enclosing function runs, the step's ops are concrete), keeps
// every element as a TensorArray does, and stacks them into the output.
#include <cstring>
#include <string>

#include "op_parts.h"
#include "tleak/runtime/graph.h"
#include "tleak/runtime/ops.h"

namespace tleak::runtime {
namespace detail::op_parts {

TensorSpec infer_tensor_array_loop(const OpDef&, std::span<const TensorSpec> in, const Attrs& attrs) {
  Shape shape = {attrs.ints.at(0)};
  shape.insert(shape.end(), attrs.shape.begin(), attrs.shape.end());
  return {std::move(shape), DType::kFloat32, in.empty() ? Placement::kHost : in[0].placement};
}

void kernel_tensor_array_loop(Runtime& rt, std::span<const Tensor> in, const Attrs& attrs, const Tensor& out) {
  const std::int64_t count = attrs.ints.at(0);
  std::vector<Tensor> elements;  // the TensorArray
  elements.reserve(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) {
    Tensor element = (*attrs.loop_step)(i, in);
    if (element.is_symbolic() || element.shape() != attrs.shape || element.dtype() != DType::kFloat32) {
      throw ShapeError("tensor_array_loop: step " + std::to_string(i) + " made a " + to_string(element.shape()) +
                       " element, not the array's concrete float32 " + to_string(attrs.shape));
    }
    elements.push_back(std::move(element));
  }
  rt.begin_op("tensor_array_stack");
  const std::size_t row = static_cast<std::size_t>(num_elements(attrs.shape)) * sizeof(float);
  auto* target = static_cast<char*>(out.buffer()->data());
  for (std::size_t i = 0; i < elements.size(); ++i) {
    std::memcpy(target + i * row, elements[i].buffer()->data(), row);
    rt.use(elements[i]);
  }
}

}  // namespace detail::op_parts

Tensor tensor_array_loop(Runtime& rt, std::int64_t count, Shape element_shape, std::vector<Tensor> inputs,
                         detail::LoopStep step) {
  if (count < 0) throw ShapeError("tensor_array_loop: negative count " + std::to_string(count));
  detail::Attrs attrs;
  attrs.ints = {count};
  attrs.shape = std::move(element_shape);
  attrs.loop_step = std::make_shared<const detail::LoopStep>(std::move(step));
  return detail::dispatch(rt, detail::op("tensor_array_loop"), std::move(inputs), std::move(attrs));
}

}  // namespace tleak::runtime
