// How an op is defined once and run in every mode: shape inference, a kernel over concrete
// buffers, the scalar function of elementwise ops (what the JIT fuses), and the gradient.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "tleak/runtime/runtime.h"
#include "tleak/runtime/tensor.h"

namespace tleak::runtime {
class Generator;
}

namespace tleak::runtime::detail {

// One step of a symbolic loop (tensor_array_loop): step i's element, made with ops from the loop's
// inputs.
using LoopStep = std::function<Tensor(std::int64_t step, std::span<const Tensor> inputs)>;

struct Attrs {
  Shape shape;                      // target shape (fill, reshape, broadcast_to, random)
  std::vector<std::int64_t> ints;   // permutation (transpose), sizes (concat gradient)
  std::int64_t axis = -1;           // -1 with has_axis false: all axes
  bool has_axis = false;
  float a = 0, b = 0;               // fill value; mean/stddev; low/high
  std::uint64_t seed = 0;
  DType dtype = DType::kFloat32;
  Placement placement = Placement::kHost;
  Generator* generator = nullptr;   // stateful random ops
  Tensor value;                     // constants: the owned data
  std::shared_ptr<const LoopStep> loop_step;  // tensor_array_loop: its body (count in ints[0])
};

struct OpDef;
using InferFn = TensorSpec (*)(const OpDef& op, std::span<const TensorSpec> inputs, const Attrs& attrs);
using KernelFn = void (*)(Runtime& rt, std::span<const Tensor> inputs, const Attrs& attrs, const Tensor& out);
// Gradients of the inputs given the gradient of the output; an undefined Tensor where none flows.
using GradFn = std::vector<Tensor> (*)(std::span<const Tensor> inputs, const Tensor& output,
                                       const Tensor& grad, const Attrs& attrs);

struct OpDef {
  const char* name;
  int arity;  // -1: any number of inputs
  InferFn infer;
  KernelFn kernel;
  float (*unary)(float) = nullptr;          // elementwise unary: out = unary(x)
  float (*binary)(float, float) = nullptr;  // elementwise binary: out = binary(x, y)
  // The same over n contiguous elements, inlined and vectorized: what fused kernels call per tile.
  // A `scalar` operand is one value repeated.
  void (*unary_tile)(const float* x, float* out, std::int64_t n) = nullptr;
  void (*binary_tile)(const float* x, bool x_scalar, const float* y, bool y_scalar, float* out,
                      std::int64_t n) = nullptr;
  GradFn grad = nullptr;
  // What the gradient reads besides shapes: the inputs' values (mul, matmul) and the output's
  // (exp, tanh). A tape keeps only those bytes alive, as TensorFlow's tape skips what a gradient
  // never reads (its gradient exclusions) and PyTorch saves only what backward needs.
  bool grad_reads_inputs = true;
  bool grad_reads_output = false;
  bool produces_constant = false;  // the Const op: its value lives in attrs.value
};

// The op table, by name ("add", "matmul", ...). Throws std::logic_error for an unknown name.
const OpDef& op(const char* name);

// Runs `def` on `inputs`: eagerly, or by adding a node to the graph being built.
Tensor dispatch(Runtime& rt, const OpDef& def, std::vector<Tensor> inputs, Attrs attrs);

// The placement ops should default to: the innermost PlacementScope, else host.
Placement default_placement();
const Placement* current_placement_scope();

}  // namespace tleak::runtime::detail
