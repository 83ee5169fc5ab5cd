// The parts op definitions are made of, one file per kind: shape inference (op_shapes.cc),
// kernels (op_kernels.cc, elementwise ones in elementwise_ops.h), gradients (op_gradients.cc). The
// op table (op_table.cc) puts each op's parts together.
#pragma once

#include <span>
#include <vector>

#include "tleak/runtime/detail/op_def.h"

namespace tleak::runtime::detail::op_parts {

inline float* f32(const Tensor& t) { return static_cast<float*>(t.buffer()->data()); }

TensorSpec infer_source(const OpDef&, std::span<const TensorSpec>, const Attrs& attrs);
TensorSpec infer_constant(const OpDef&, std::span<const TensorSpec>, const Attrs& attrs);
TensorSpec infer_unary(const OpDef& op, std::span<const TensorSpec> in, const Attrs&);
TensorSpec infer_binary(const OpDef& op, std::span<const TensorSpec> in, const Attrs&);
TensorSpec infer_matmul(const OpDef& op, std::span<const TensorSpec> in, const Attrs&);
TensorSpec infer_reduce(const OpDef& op, std::span<const TensorSpec> in, const Attrs& attrs);
TensorSpec infer_stack(const OpDef& op, std::span<const TensorSpec> in, const Attrs& attrs);
TensorSpec infer_concat(const OpDef& op, std::span<const TensorSpec> in, const Attrs& attrs);
TensorSpec infer_reshape(const OpDef& op, std::span<const TensorSpec> in, const Attrs& attrs);
TensorSpec infer_transpose(const OpDef& op, std::span<const TensorSpec> in, const Attrs& attrs);
TensorSpec infer_broadcast_to(const OpDef& op, std::span<const TensorSpec> in, const Attrs& attrs);
TensorSpec infer_copy(const OpDef&, std::span<const TensorSpec> in, const Attrs& attrs);
TensorSpec infer_take(const OpDef& op, std::span<const TensorSpec> in, const Attrs& attrs);
TensorSpec infer_slice(const OpDef& op, std::span<const TensorSpec> in, const Attrs& attrs);
TensorSpec infer_expand(const OpDef& op, std::span<const TensorSpec> in, const Attrs& attrs);
TensorSpec infer_tensor_array_loop(const OpDef& op, std::span<const TensorSpec> in, const Attrs& attrs);

void kernel_fill(Runtime&, std::span<const Tensor>, const Attrs& attrs, const Tensor& out);
void kernel_range(Runtime&, std::span<const Tensor>, const Attrs& attrs, const Tensor& out);
void kernel_random_normal(Runtime& rt, std::span<const Tensor> in, const Attrs& attrs, const Tensor& out);
void kernel_random_uniform(Runtime& rt, std::span<const Tensor> in, const Attrs& attrs, const Tensor& out);
void kernel_matmul(Runtime&, std::span<const Tensor> in, const Attrs&, const Tensor& out);
void kernel_reduce_sum(Runtime&, std::span<const Tensor> in, const Attrs& attrs, const Tensor& out);
void kernel_reduce_mean(Runtime&, std::span<const Tensor> in, const Attrs& attrs, const Tensor& out);
void kernel_stack(Runtime&, std::span<const Tensor> in, const Attrs& attrs, const Tensor& out);
void kernel_concat(Runtime&, std::span<const Tensor> in, const Attrs& attrs, const Tensor& out);
void kernel_copy(Runtime&, std::span<const Tensor> in, const Attrs&, const Tensor& out);
void kernel_tensor_array_loop(Runtime& rt, std::span<const Tensor> in, const Attrs& attrs, const Tensor& out);
void kernel_transpose(Runtime&, std::span<const Tensor> in, const Attrs& attrs, const Tensor& out);
void kernel_broadcast_to(Runtime&, std::span<const Tensor> in, const Attrs&, const Tensor& out);
void kernel_take(Runtime&, std::span<const Tensor> in, const Attrs& attrs, const Tensor& out);
void kernel_slice(Runtime&, std::span<const Tensor> in, const Attrs& attrs, const Tensor& out);
void kernel_expand(Runtime&, std::span<const Tensor> in, const Attrs& attrs, const Tensor& out);

std::vector<Tensor> grad_add(std::span<const Tensor> in, const Tensor&, const Tensor& g, const Attrs&);
std::vector<Tensor> grad_sub(std::span<const Tensor> in, const Tensor&, const Tensor& g, const Attrs&);
std::vector<Tensor> grad_mul(std::span<const Tensor> in, const Tensor&, const Tensor& g, const Attrs&);
std::vector<Tensor> grad_div(std::span<const Tensor> in, const Tensor&, const Tensor& g, const Attrs&);
std::vector<Tensor> grad_square(std::span<const Tensor> in, const Tensor&, const Tensor& g, const Attrs&);
std::vector<Tensor> grad_neg(std::span<const Tensor>, const Tensor&, const Tensor& g, const Attrs&);
std::vector<Tensor> grad_exp(std::span<const Tensor>, const Tensor& out, const Tensor& g, const Attrs&);
std::vector<Tensor> grad_tanh(std::span<const Tensor>, const Tensor& out, const Tensor& g, const Attrs&);
std::vector<Tensor> grad_relu(std::span<const Tensor> in, const Tensor&, const Tensor& g, const Attrs&);
std::vector<Tensor> grad_matmul(std::span<const Tensor> in, const Tensor&, const Tensor& g, const Attrs&);
std::vector<Tensor> grad_reduce_sum(std::span<const Tensor> in, const Tensor&, const Tensor& g, const Attrs& attrs);
std::vector<Tensor> grad_reduce_mean(std::span<const Tensor> in, const Tensor&, const Tensor& g, const Attrs& attrs);
std::vector<Tensor> grad_reshape(std::span<const Tensor> in, const Tensor&, const Tensor& g, const Attrs&);
std::vector<Tensor> grad_transpose(std::span<const Tensor>, const Tensor&, const Tensor& g, const Attrs& attrs);
std::vector<Tensor> grad_broadcast_to(std::span<const Tensor> in, const Tensor&, const Tensor& g, const Attrs&);
std::vector<Tensor> grad_stack(std::span<const Tensor> in, const Tensor& out, const Tensor& g, const Attrs& attrs);
std::vector<Tensor> grad_concat(std::span<const Tensor> in, const Tensor& out, const Tensor& g, const Attrs& attrs);
std::vector<Tensor> grad_copy(std::span<const Tensor> in, const Tensor&, const Tensor& g, const Attrs&);

}  // namespace tleak::runtime::detail::op_parts
