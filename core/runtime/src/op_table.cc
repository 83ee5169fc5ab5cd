// The table of every op: its shape inference, kernel, scalar and tile functions (elementwise ops)
// and gradient, by name.
#include <map>
#include <string>

#include "elementwise_ops.h"
#include "op_parts.h"

namespace tleak::runtime::detail {
namespace {

using namespace op_parts;

const std::map<std::string, OpDef>& table() {
  static const std::map<std::string, OpDef> ops = [] {
    std::map<std::string, OpDef> t;
    const auto def = [&](OpDef d) { t.emplace(d.name, d); };
    def({.name = "constant", .arity = 0, .infer = infer_constant, .kernel = nullptr, .produces_constant = true});
    def({.name = "fill", .arity = 0, .infer = infer_source, .kernel = kernel_fill});
    def({.name = "range", .arity = 0, .infer = infer_source, .kernel = kernel_range});
    def({.name = "random_normal", .arity = 0, .infer = infer_source, .kernel = kernel_random_normal});
    def({.name = "random_uniform", .arity = 0, .infer = infer_source, .kernel = kernel_random_uniform});
    def({.name = "add", .arity = 2, .infer = infer_binary, .kernel = kernel_binary<Add>, .binary = Add::scalar, .binary_tile = tile_binary<Add>, .grad = grad_add, .grad_reads_inputs = false});
    def({.name = "sub", .arity = 2, .infer = infer_binary, .kernel = kernel_binary<Sub>, .binary = Sub::scalar, .binary_tile = tile_binary<Sub>, .grad = grad_sub, .grad_reads_inputs = false});
    def({.name = "mul", .arity = 2, .infer = infer_binary, .kernel = kernel_binary<Mul>, .binary = Mul::scalar, .binary_tile = tile_binary<Mul>, .grad = grad_mul});
    def({.name = "div", .arity = 2, .infer = infer_binary, .kernel = kernel_binary<Div>, .binary = Div::scalar, .binary_tile = tile_binary<Div>, .grad = grad_div});
    def({.name = "relu_grad", .arity = 2, .infer = infer_binary, .kernel = kernel_binary<ReluGrad>, .binary = ReluGrad::scalar, .binary_tile = tile_binary<ReluGrad>});
    def({.name = "square", .arity = 1, .infer = infer_unary, .kernel = kernel_unary<Square>, .unary = Square::scalar, .unary_tile = tile_unary<Square>, .grad = grad_square});
    def({.name = "neg", .arity = 1, .infer = infer_unary, .kernel = kernel_unary<Neg>, .unary = Neg::scalar, .unary_tile = tile_unary<Neg>, .grad = grad_neg, .grad_reads_inputs = false});
    def({.name = "exp", .arity = 1, .infer = infer_unary, .kernel = kernel_unary<Exp>, .unary = Exp::scalar, .unary_tile = tile_unary<Exp>, .grad = grad_exp, .grad_reads_inputs = false, .grad_reads_output = true});
    def({.name = "tanh", .arity = 1, .infer = infer_unary, .kernel = kernel_unary<Tanh>, .unary = Tanh::scalar, .unary_tile = tile_unary<Tanh>, .grad = grad_tanh, .grad_reads_inputs = false, .grad_reads_output = true});
    def({.name = "relu", .arity = 1, .infer = infer_unary, .kernel = kernel_unary<Relu>, .unary = Relu::scalar, .unary_tile = tile_unary<Relu>, .grad = grad_relu});
    def({.name = "matmul", .arity = 2, .infer = infer_matmul, .kernel = kernel_matmul, .grad = grad_matmul});
    def({.name = "reduce_sum", .arity = 1, .infer = infer_reduce, .kernel = kernel_reduce_sum, .grad = grad_reduce_sum, .grad_reads_inputs = false});
    def({.name = "reduce_mean", .arity = 1, .infer = infer_reduce, .kernel = kernel_reduce_mean, .grad = grad_reduce_mean, .grad_reads_inputs = false});
    def({.name = "stack", .arity = -1, .infer = infer_stack, .kernel = kernel_stack, .grad = grad_stack, .grad_reads_inputs = false});
    def({.name = "concat", .arity = -1, .infer = infer_concat, .kernel = kernel_concat, .grad = grad_concat, .grad_reads_inputs = false});
    def({.name = "reshape", .arity = 1, .infer = infer_reshape, .kernel = kernel_copy, .grad = grad_reshape, .grad_reads_inputs = false});
    def({.name = "transpose", .arity = 1, .infer = infer_transpose, .kernel = kernel_transpose, .grad = grad_transpose, .grad_reads_inputs = false});
    def({.name = "broadcast_to", .arity = 1, .infer = infer_broadcast_to, .kernel = kernel_broadcast_to, .grad = grad_broadcast_to, .grad_reads_inputs = false});
    def({.name = "copy", .arity = 1, .infer = infer_copy, .kernel = kernel_copy, .grad = grad_copy});
    def({.name = "take", .arity = 1, .infer = infer_take, .kernel = kernel_take});
    def({.name = "slice", .arity = 1, .infer = infer_slice, .kernel = kernel_slice});
    def({.name = "expand", .arity = 1, .infer = infer_expand, .kernel = kernel_expand});
    def({.name = "tensor_array_loop", .arity = -1, .infer = infer_tensor_array_loop, .kernel = kernel_tensor_array_loop});
    return t;
  }();
  return ops;
}

}  // namespace

const OpDef& op(const char* name) {
  const auto& t = table();
  const auto it = t.find(name);
  if (it == t.end()) throw std::logic_error(std::string("no op named ") + name);
  return it->second;
}

}  // namespace tleak::runtime::detail
