// Every op of the runtime. Each runs at once on concrete tensors (eager), or adds a node to the
// graph its symbolic inputs belong to, or to the default graph of the current GraphScope (graph.h).
// Shape and dtype errors throw ShapeError naming the op and the shapes involved.
//
// Elementwise binary ops take equal shapes, or a one-element tensor on either side (broadcast of a
// scalar). Inputs must share a placement unless a PlacementScope says where the op runs, in which
// case inputs elsewhere are copied there first.
#pragma once

#include <cstdint>
#include <vector>

#include "tleak/runtime/detail/op_def.h"
#include "tleak/runtime/runtime.h"
#include "tleak/runtime/tensor.h"

namespace tleak::runtime {

class Generator;

// Creation. `placement` defaults to the current PlacementScope, else host.
Tensor constant(Runtime& rt, const std::vector<float>& values, Shape shape);
Tensor constant_int(Runtime& rt, const std::vector<std::int32_t>& values, Shape shape);
Tensor scalar(Runtime& rt, float value);
Tensor fill(Runtime& rt, Shape shape, float value);
Tensor range(Runtime& rt, std::int64_t n);  // 0, 1, ..., n-1 as float32
Tensor range_int(Runtime& rt, std::int64_t n);
// Stateful: draws from and advances `generator`'s state tensor.
Tensor random_normal(Generator& generator, Shape shape, float mean = 0, float stddev = 1);
Tensor random_uniform(Generator& generator, Shape shape, float low = 0, float high = 1);
// The runtime's default generator.
Tensor random_normal(Runtime& rt, Shape shape, float mean = 0, float stddev = 1);
Tensor random_uniform(Runtime& rt, Shape shape, float low = 0, float high = 1);
// Stateless: a pure function of the seed.
Tensor stateless_random_normal(Runtime& rt, Shape shape, std::uint64_t seed, float mean = 0, float stddev = 1);
Tensor stateless_random_uniform(Runtime& rt, Shape shape, std::uint64_t seed, float low = 0, float high = 1);

// Elementwise.
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor square(const Tensor& a);
Tensor neg(const Tensor& a);
Tensor exp(const Tensor& a);
Tensor tanh(const Tensor& a);
Tensor relu(const Tensor& a);

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator-(const Tensor& a) { return neg(a); }

// [m, k] x [k, n] -> [m, n], computed by Eigen.
Tensor matmul(const Tensor& a, const Tensor& b);

// Over every element (result shape []), or over one axis (that axis removed).
Tensor reduce_sum(const Tensor& a);
Tensor reduce_sum(const Tensor& a, std::int64_t axis);
Tensor reduce_mean(const Tensor& a);
Tensor reduce_mean(const Tensor& a, std::int64_t axis);

Tensor stack(const std::vector<Tensor>& tensors, std::int64_t axis = 0);
// A tf.while_loop over tf.range(count) that writes step i's element into a tf.TensorArray, then
// stacks it ([count, element_shape...]). `step(i, inputs)` makes the element with ops, of
// `element_shape`. In a graph this is one node, as a while loop is: the loop counter is a value at
// run time, not a constant frozen into the trace, and each step's temporaries go with the step;
// the array holds every element until the stack.
Tensor tensor_array_loop(Runtime& rt, std::int64_t count, Shape element_shape, std::vector<Tensor> inputs,
                         detail::LoopStep step);
Tensor concat(const std::vector<Tensor>& tensors, std::int64_t axis = 0);
// Same elements, new shape; shares the bytes in eager mode. One dimension may be -1.
Tensor reshape(const Tensor& a, Shape shape);
// Reverses the axes, or permutes them by `perm`.
Tensor transpose(const Tensor& a);
Tensor transpose(const Tensor& a, std::vector<std::int64_t> perm);
// A tensor of `shape` with every element equal to the one-element tensor `a`.
Tensor broadcast_to(const Tensor& a, Shape shape);

// Explicit copies between host and device memory.
Tensor to_device(const Tensor& a);
Tensor to_host(const Tensor& a);

// Where ops created in this scope run; inputs elsewhere are copied there (like a device scope).
class PlacementScope {
 public:
  explicit PlacementScope(Placement placement);
  ~PlacementScope();
  PlacementScope(const PlacementScope&) = delete;
  PlacementScope& operator=(const PlacementScope&) = delete;

 private:
  const Placement* previous_;
  Placement placement_;
};

}  // namespace tleak::runtime
