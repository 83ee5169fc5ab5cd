// Elementwise ops as functors with a scalar form (for single values) and an Eigen array form,
// which Eigen vectorizes (tanh and exp included): eager kernels and the fused-kernel interpreter's
// tiles both use it.
#pragma once

#include <Eigen/Core>
#include <cmath>

#include "op_parts.h"

namespace tleak::runtime::detail::op_parts {

using ArrayMap = Eigen::Map<Eigen::ArrayXf>;
using ConstArrayMap = Eigen::Map<const Eigen::ArrayXf>;

struct Add {
  static float scalar(float a, float b) { return a + b; }
  template <class X, class Y> static auto array(const X& x, const Y& y) { return x + y; }
};
struct Sub {
  static float scalar(float a, float b) { return a - b; }
  template <class X, class Y> static auto array(const X& x, const Y& y) { return x - y; }
};
struct Mul {
  static float scalar(float a, float b) { return a * b; }
  template <class X, class Y> static auto array(const X& x, const Y& y) { return x * y; }
};
struct Div {
  static float scalar(float a, float b) { return a / b; }
  template <class X, class Y> static auto array(const X& x, const Y& y) { return x / y; }
};
// relu's gradient: the incoming gradient where the input was positive.
struct ReluGrad {
  static float scalar(float g, float x) { return x > 0 ? g : 0; }
  template <class X, class Y> static auto array(const X& g, const Y& x) { return (x > 0.0f).select(g, 0.0f); }
};
struct Square {
  static float scalar(float a) { return a * a; }
  template <class X> static auto array(const X& x) { return x.square(); }
};
struct Neg {
  static float scalar(float a) { return -a; }
  template <class X> static auto array(const X& x) { return -x; }
};
struct Exp {
  static float scalar(float a) { return std::exp(a); }
  template <class X> static auto array(const X& x) { return x.exp(); }
};
struct Tanh {
  static float scalar(float a) { return std::tanh(a); }
  template <class X> static auto array(const X& x) { return x.tanh(); }
};
struct Relu {
  static float scalar(float a) { return a > 0 ? a : 0; }
  template <class X> static auto array(const X& x) { return x.max(0.0f); }
};

template <class Op>
void tile_unary(const float* x, float* out, std::int64_t n) {
  ArrayMap(out, n) = Op::array(ConstArrayMap(x, n));
}

template <class Op>
void tile_binary(const float* x, bool x_scalar, const float* y, bool y_scalar, float* out, std::int64_t n) {
  ArrayMap o(out, n);
  if (!x_scalar && !y_scalar) {
    o = Op::array(ConstArrayMap(x, n), ConstArrayMap(y, n));
  } else if (y_scalar) {
    o = Op::array(ConstArrayMap(x, n), Eigen::ArrayXf::Constant(n, y[0]));
  } else {
    o = Op::array(Eigen::ArrayXf::Constant(n, x[0]), ConstArrayMap(y, n));
  }
}

template <class Op>
void kernel_unary(Runtime&, std::span<const Tensor> in, const Attrs&, const Tensor& out) {
  tile_unary<Op>(f32(in[0]), f32(out), out.size());
}

template <class Op>
void kernel_binary(Runtime&, std::span<const Tensor> in, const Attrs&, const Tensor& out) {
  const std::int64_t n = out.size();
  tile_binary<Op>(f32(in[0]), in[0].size() != n, f32(in[1]), in[1].size() != n, f32(out), n);
}

}  // namespace tleak::runtime::detail::op_parts
