// Reverse-mode gradients: the gradients of an op's inputs given its output's, written with the
// public ops so that they run (and are recorded) in whatever mode the tape is in.
#include "op_parts.h"
#include "tleak/runtime/ops.h"

namespace tleak::runtime::detail::op_parts {
namespace {

// A gradient of an input that was broadcast from one element is the sum over the output.
Tensor unbroadcast(const Tensor& grad, const Tensor& input) {
  if (grad.shape() == input.shape()) return grad;
  return reshape(reduce_sum(grad), input.shape());
}

std::vector<Tensor> grad_reduce(std::span<const Tensor> in, const Tensor& g, const Attrs& attrs, bool mean) {
  const Shape& s = in[0].shape();
  Tensor spread;
  std::int64_t count = in[0].size();
  if (!attrs.has_axis) {
    spread = broadcast_to(g, s);
  } else {
    const auto axis = attrs.axis < 0 ? attrs.axis + in[0].rank() : attrs.axis;
    Attrs expand;
    expand.axis = axis;
    expand.has_axis = true;
    expand.ints = {s[static_cast<std::size_t>(axis)]};
    spread = dispatch(g.buffer()->runtime(), op("expand"), {g}, expand);
    count = s[static_cast<std::size_t>(axis)];
  }
  if (mean) spread = div(spread, scalar(g.buffer()->runtime(), static_cast<float>(std::max<std::int64_t>(count, 1))));
  return {spread};
}

}  // namespace

std::vector<Tensor> grad_add(std::span<const Tensor> in, const Tensor&, const Tensor& g, const Attrs&) {
  return {unbroadcast(g, in[0]), unbroadcast(g, in[1])};
}
std::vector<Tensor> grad_sub(std::span<const Tensor> in, const Tensor&, const Tensor& g, const Attrs&) {
  return {unbroadcast(g, in[0]), unbroadcast(neg(g), in[1])};
}
std::vector<Tensor> grad_mul(std::span<const Tensor> in, const Tensor&, const Tensor& g, const Attrs&) {
  return {unbroadcast(mul(g, in[1]), in[0]), unbroadcast(mul(g, in[0]), in[1])};
}
std::vector<Tensor> grad_div(std::span<const Tensor> in, const Tensor&, const Tensor& g, const Attrs&) {
  return {unbroadcast(div(g, in[1]), in[0]),
          unbroadcast(neg(div(mul(g, in[0]), square(in[1]))), in[1])};
}
std::vector<Tensor> grad_square(std::span<const Tensor> in, const Tensor&, const Tensor& g, const Attrs&) {
  return {mul(g, mul(in[0], scalar(in[0].buffer()->runtime(), 2.0f)))};
}
std::vector<Tensor> grad_neg(std::span<const Tensor>, const Tensor&, const Tensor& g, const Attrs&) { return {neg(g)}; }
std::vector<Tensor> grad_exp(std::span<const Tensor>, const Tensor& out, const Tensor& g, const Attrs&) {
  return {mul(g, out)};
}
std::vector<Tensor> grad_tanh(std::span<const Tensor>, const Tensor& out, const Tensor& g, const Attrs&) {
  return {mul(g, sub(scalar(out.buffer()->runtime(), 1.0f), square(out)))};
}
std::vector<Tensor> grad_relu(std::span<const Tensor> in, const Tensor&, const Tensor& g, const Attrs&) {
  return {dispatch(g.buffer()->runtime(), op("relu_grad"), {g, in[0]}, {})};
}
std::vector<Tensor> grad_matmul(std::span<const Tensor> in, const Tensor&, const Tensor& g, const Attrs&) {
  return {matmul(g, transpose(in[1])), matmul(transpose(in[0]), g)};
}
std::vector<Tensor> grad_reduce_sum(std::span<const Tensor> in, const Tensor&, const Tensor& g, const Attrs& attrs) {
  return grad_reduce(in, g, attrs, false);
}
std::vector<Tensor> grad_reduce_mean(std::span<const Tensor> in, const Tensor&, const Tensor& g, const Attrs& attrs) {
  return grad_reduce(in, g, attrs, true);
}
std::vector<Tensor> grad_reshape(std::span<const Tensor> in, const Tensor&, const Tensor& g, const Attrs&) {
  return {reshape(g, in[0].shape())};
}
std::vector<Tensor> grad_transpose(std::span<const Tensor>, const Tensor&, const Tensor& g, const Attrs& attrs) {
  std::vector<std::int64_t> inverse(attrs.ints.size());
  for (std::size_t i = 0; i < attrs.ints.size(); ++i) inverse[static_cast<std::size_t>(attrs.ints[i])] = static_cast<std::int64_t>(i);
  return {transpose(g, inverse)};
}
std::vector<Tensor> grad_broadcast_to(std::span<const Tensor> in, const Tensor&, const Tensor& g, const Attrs&) {
  return {reshape(reduce_sum(g), in[0].shape())};
}
std::vector<Tensor> grad_stack(std::span<const Tensor> in, const Tensor&, const Tensor& g, const Attrs& attrs) {
  std::vector<Tensor> grads;
  const auto axis = attrs.axis < 0 ? attrs.axis + in[0].rank() + 1 : attrs.axis;
  for (std::size_t i = 0; i < in.size(); ++i) {
    Attrs take;
    take.axis = axis;
    take.has_axis = true;
    take.ints = {static_cast<std::int64_t>(i)};
    grads.push_back(dispatch(g.buffer()->runtime(), op("take"), {g}, take));
  }
  return grads;
}
std::vector<Tensor> grad_concat(std::span<const Tensor> in, const Tensor&, const Tensor& g, const Attrs& attrs) {
  std::vector<Tensor> grads;
  const auto axis = attrs.axis < 0 ? attrs.axis + in[0].rank() : attrs.axis;
  std::int64_t begin = 0;
  for (const Tensor& t : in) {
    Attrs slice;
    slice.axis = axis;
    slice.has_axis = true;
    slice.ints = {begin, t.shape()[static_cast<std::size_t>(axis)]};
    begin += slice.ints[1];
    grads.push_back(dispatch(g.buffer()->runtime(), op("slice"), {g}, slice));
  }
  return grads;
}
std::vector<Tensor> grad_copy(std::span<const Tensor> in, const Tensor&, const Tensor& g, const Attrs&) {
  return {in[0].placement() == Placement::kHost ? to_host(g) : to_device(g)};
}

}  // namespace tleak::runtime::detail::op_parts
