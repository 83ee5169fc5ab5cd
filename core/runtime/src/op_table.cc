// The definition of every op: shape inference, the kernel, the scalar function of elementwise ops,
// and the gradient. Kernels work on concrete, already-allocated tensors; dispatch (ops.cc) does
// the allocating, the bookkeeping and the graph building.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <string>

#include "tleak/runtime/detail/op_def.h"
#include "tleak/runtime/ops.h"
#include "tleak/runtime/random.h"

namespace tleak::runtime::detail {
namespace {

[[noreturn]] void fail(const OpDef& op, const std::string& why) { throw ShapeError(std::string(op.name) + ": " + why); }

void require_float(const OpDef& op, const TensorSpec& s) {
  if (s.dtype != DType::kFloat32) fail(op, std::string("dtype ") + to_string(s.dtype) + " is not supported (float32 only)");
}

std::int64_t normalize_axis(const OpDef& op, std::int64_t axis, std::int64_t rank, const Shape& shape) {
  const std::int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) fail(op, "axis " + std::to_string(axis) + " is out of range for shape " + to_string(shape));
  return a;
}

std::int64_t product(const Shape& s, std::size_t from, std::size_t to) {
  std::int64_t p = 1;
  for (std::size_t i = from; i < to && i < s.size(); ++i) p *= s[i];
  return p;
}

// ---- shape inference -------------------------------------------------------------------------

TensorSpec infer_source(const OpDef&, std::span<const TensorSpec>, const Attrs& attrs) {
  return {attrs.shape, attrs.dtype, attrs.placement};
}

TensorSpec infer_constant(const OpDef&, std::span<const TensorSpec>, const Attrs& attrs) { return attrs.value.spec(); }

TensorSpec infer_unary(const OpDef& op, std::span<const TensorSpec> in, const Attrs&) {
  require_float(op, in[0]);
  return in[0];
}

TensorSpec infer_binary(const OpDef& op, std::span<const TensorSpec> in, const Attrs&) {
  require_float(op, in[0]);
  require_float(op, in[1]);
  const std::int64_t na = num_elements(in[0].shape), nb = num_elements(in[1].shape);
  if (in[0].shape == in[1].shape || nb == 1) return in[0];
  if (na == 1) return in[1];
  fail(op, "shapes " + to_string(in[0].shape) + " and " + to_string(in[1].shape) +
               " are incompatible (equal shapes or a one-element tensor on either side)");
}

TensorSpec infer_matmul(const OpDef& op, std::span<const TensorSpec> in, const Attrs&) {
  require_float(op, in[0]);
  require_float(op, in[1]);
  const Shape &a = in[0].shape, &b = in[1].shape;
  if (a.size() != 2 || b.size() != 2 || a[1] != b[0]) {
    fail(op, "shapes " + to_string(a) + " and " + to_string(b) + " cannot be multiplied (need [m, k] and [k, n])");
  }
  return {{a[0], b[1]}, DType::kFloat32, in[0].placement};
}

TensorSpec infer_reduce(const OpDef& op, std::span<const TensorSpec> in, const Attrs& attrs) {
  require_float(op, in[0]);
  if (!attrs.has_axis) return {{}, DType::kFloat32, in[0].placement};
  Shape out = in[0].shape;
  const auto axis = normalize_axis(op, attrs.axis, static_cast<std::int64_t>(out.size()), out);
  out.erase(out.begin() + axis);
  return {out, DType::kFloat32, in[0].placement};
}

TensorSpec infer_stack(const OpDef& op, std::span<const TensorSpec> in, const Attrs& attrs) {
  if (in.empty()) fail(op, "needs at least one tensor");
  for (const TensorSpec& s : in) {
    if (s.shape != in[0].shape || s.dtype != in[0].dtype) {
      fail(op, "shapes " + to_string(in[0].shape) + " and " + to_string(s.shape) + " differ (all inputs must match)");
    }
  }
  Shape out = in[0].shape;
  const auto axis = normalize_axis(op, attrs.axis, static_cast<std::int64_t>(out.size()) + 1, out);
  out.insert(out.begin() + axis, static_cast<std::int64_t>(in.size()));
  return {out, in[0].dtype, in[0].placement};
}

TensorSpec infer_concat(const OpDef& op, std::span<const TensorSpec> in, const Attrs& attrs) {
  if (in.empty()) fail(op, "needs at least one tensor");
  Shape out = in[0].shape;
  if (out.empty()) fail(op, "cannot concatenate scalars (shape [])");
  const auto axis = normalize_axis(op, attrs.axis, static_cast<std::int64_t>(out.size()), out);
  out[axis] = 0;
  for (const TensorSpec& s : in) {
    Shape a = s.shape, b = in[0].shape;
    if (a.size() != b.size() || s.dtype != in[0].dtype) {
      fail(op, "shapes " + to_string(in[0].shape) + " and " + to_string(s.shape) + " differ in rank or dtype");
    }
    out[axis] += a[axis];
    a[axis] = b[axis] = 0;
    if (a != b) fail(op, "shapes " + to_string(in[0].shape) + " and " + to_string(s.shape) + " differ outside axis " + std::to_string(axis));
  }
  return {out, in[0].dtype, in[0].placement};
}

TensorSpec infer_reshape(const OpDef& op, std::span<const TensorSpec> in, const Attrs& attrs) {
  Shape out = attrs.shape;
  const auto unknown = std::count(out.begin(), out.end(), -1);
  const std::int64_t n = num_elements(in[0].shape);
  if (unknown > 1) fail(op, "target shape " + to_string(out) + " has more than one -1");
  std::int64_t known = 1;
  for (std::int64_t d : out) {
    if (d < -1) fail(op, "target shape " + to_string(out) + " has a negative dimension");
    if (d != -1) known *= d;
  }
  if (unknown == 1) {
    if (known == 0 || n % known != 0) fail(op, "cannot reshape " + to_string(in[0].shape) + " to " + to_string(out));
    *std::find(out.begin(), out.end(), -1) = n / known;
  }
  if (num_elements(out) != n) {
    fail(op, "cannot reshape " + to_string(in[0].shape) + " (" + std::to_string(n) + " elements) to " + to_string(out));
  }
  return {out, in[0].dtype, in[0].placement};
}

TensorSpec infer_transpose(const OpDef& op, std::span<const TensorSpec> in, const Attrs& attrs) {
  const Shape& s = in[0].shape;
  std::vector<std::int64_t> sorted = attrs.ints;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::int64_t> identity(s.size());
  std::iota(identity.begin(), identity.end(), 0);
  if (sorted != identity) fail(op, "permutation does not match shape " + to_string(s));
  Shape out;
  for (std::int64_t p : attrs.ints) out.push_back(s[p]);
  return {out, in[0].dtype, in[0].placement};
}

TensorSpec infer_broadcast_to(const OpDef& op, std::span<const TensorSpec> in, const Attrs& attrs) {
  require_float(op, in[0]);
  if (num_elements(in[0].shape) != 1) fail(op, "input " + to_string(in[0].shape) + " is not a one-element tensor");
  return {attrs.shape, DType::kFloat32, in[0].placement};
}

TensorSpec infer_copy(const OpDef&, std::span<const TensorSpec> in, const Attrs& attrs) {
  return {in[0].shape, in[0].dtype, attrs.placement};
}

// take: removes `axis`, keeping index ints[0]. slice: ints = {begin, size} along `axis`.
TensorSpec infer_take(const OpDef& op, std::span<const TensorSpec> in, const Attrs& attrs) {
  Shape out = in[0].shape;
  const auto axis = normalize_axis(op, attrs.axis, static_cast<std::int64_t>(out.size()), out);
  if (attrs.ints.at(0) < 0 || attrs.ints[0] >= out[axis]) fail(op, "index out of range");
  out.erase(out.begin() + axis);
  return {out, in[0].dtype, in[0].placement};
}

TensorSpec infer_slice(const OpDef& op, std::span<const TensorSpec> in, const Attrs& attrs) {
  Shape out = in[0].shape;
  const auto axis = normalize_axis(op, attrs.axis, static_cast<std::int64_t>(out.size()), out);
  if (attrs.ints.at(0) < 0 || attrs.ints.at(0) + attrs.ints.at(1) > out[axis]) fail(op, "slice out of range");
  out[axis] = attrs.ints[1];
  return {out, in[0].dtype, in[0].placement};
}

// expand: inserts `axis` of size ints[0], repeating the input along it (reduce_sum's gradient).
TensorSpec infer_expand(const OpDef& op, std::span<const TensorSpec> in, const Attrs& attrs) {
  Shape out = in[0].shape;
  const auto axis = normalize_axis(op, attrs.axis, static_cast<std::int64_t>(out.size()) + 1, out);
  out.insert(out.begin() + axis, attrs.ints.at(0));
  return {out, in[0].dtype, in[0].placement};
}

// ---- kernels ---------------------------------------------------------------------------------

float* f32(const Tensor& t) { return static_cast<float*>(t.buffer()->data()); }

void kernel_fill(Runtime&, std::span<const Tensor>, const Attrs& attrs, const Tensor& out) {
  std::fill_n(f32(out), out.size(), attrs.a);
}

void kernel_range(Runtime&, std::span<const Tensor>, const Attrs& attrs, const Tensor& out) {
  if (attrs.dtype == DType::kInt32) {
    auto* o = static_cast<std::int32_t*>(out.buffer()->data());
    std::iota(o, o + out.size(), 0);
  } else {
    std::iota(f32(out), f32(out) + out.size(), 0.0f);
  }
}

void kernel_random(Runtime&, std::span<const Tensor>, const Attrs& attrs, const Tensor& out, bool normal) {
  std::uint64_t key = attrs.seed, counter = 0;
  if (attrs.generator != nullptr) attrs.generator->reserve(static_cast<std::uint64_t>(out.size()), &key, &counter);
  if (normal) {
    fill_normal(f32(out), out.size(), key, counter, attrs.a, attrs.b);
  } else {
    fill_uniform(f32(out), out.size(), key, counter, attrs.a, attrs.b);
  }
}
void kernel_random_normal(Runtime& rt, std::span<const Tensor> in, const Attrs& attrs, const Tensor& out) {
  kernel_random(rt, in, attrs, out, true);
}
void kernel_random_uniform(Runtime& rt, std::span<const Tensor> in, const Attrs& attrs, const Tensor& out) {
  kernel_random(rt, in, attrs, out, false);
}

// Elementwise ops as functors with a scalar form (for single values) and an Eigen array form,
// which Eigen vectorizes (tanh and exp included): eager kernels and fused tiles both use it.
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

using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

void kernel_matmul(Runtime&, std::span<const Tensor> in, const Attrs&, const Tensor& out) {
  const auto m = in[0].shape()[0], k = in[0].shape()[1], n = in[1].shape()[1];
  Eigen::Map<const RowMajor> a(f32(in[0]), m, k), b(f32(in[1]), k, n);
  Eigen::Map<RowMajor> c(f32(out), m, n);
  c.noalias() = a * b;
}

// Sum (or mean) over one axis: the input seen as [outer, axis, inner].
void kernel_reduce(std::span<const Tensor> in, const Attrs& attrs, const Tensor& out, bool mean) {
  const float* a = f32(in[0]);
  float* o = f32(out);
  if (!attrs.has_axis) {
    const double sum = Eigen::Map<const Eigen::VectorXf>(a, in[0].size()).cast<double>().sum();
    o[0] = static_cast<float>(mean ? sum / static_cast<double>(std::max<std::int64_t>(in[0].size(), 1)) : sum);
    return;
  }
  const Shape& s = in[0].shape();
  const auto axis = static_cast<std::size_t>(attrs.axis < 0 ? attrs.axis + static_cast<std::int64_t>(s.size()) : attrs.axis);
  const std::int64_t outer = product(s, 0, axis), len = s[axis], inner = product(s, axis + 1, s.size());
  Eigen::Map<const RowMajor> block(a, outer * len, inner);
  for (std::int64_t o_i = 0; o_i < outer; ++o_i) {
    Eigen::Map<Eigen::Matrix<float, 1, Eigen::Dynamic>> row(o + o_i * inner, inner);
    row = block.middleRows(o_i * len, len).colwise().sum();
    if (mean && len > 0) row /= static_cast<float>(len);
  }
}
void kernel_reduce_sum(Runtime&, std::span<const Tensor> in, const Attrs& attrs, const Tensor& out) {
  kernel_reduce(in, attrs, out, false);
}
void kernel_reduce_mean(Runtime&, std::span<const Tensor> in, const Attrs& attrs, const Tensor& out) {
  kernel_reduce(in, attrs, out, true);
}

// Concatenation along an axis; stack is concatenation of inputs seen with a new axis of size 1.
void concat_along(std::span<const Tensor> in, std::size_t axis, std::size_t element, const Tensor& out,
                  bool stacking) {
  const Shape& s = out.shape();
  const std::int64_t outer = product(s, 0, axis);
  char* o = static_cast<char*>(out.buffer()->data());
  std::int64_t offset = 0;
  const std::int64_t out_row = product(s, axis, s.size()) * static_cast<std::int64_t>(element);
  for (const Tensor& t : in) {
    const std::int64_t row = (stacking ? t.size() / std::max<std::int64_t>(outer, 1) : product(t.shape(), axis, t.shape().size())) *
                             static_cast<std::int64_t>(element);
    const char* src = static_cast<const char*>(t.buffer()->data());
    for (std::int64_t r = 0; r < outer; ++r) std::memcpy(o + r * out_row + offset, src + r * row, static_cast<std::size_t>(row));
    offset += row;
  }
}
void kernel_stack(Runtime&, std::span<const Tensor> in, const Attrs& attrs, const Tensor& out) {
  const auto axis = static_cast<std::size_t>(attrs.axis < 0 ? attrs.axis + out.rank() : attrs.axis);
  concat_along(in, axis, dtype_size(out.dtype()), out, true);
}
void kernel_concat(Runtime&, std::span<const Tensor> in, const Attrs& attrs, const Tensor& out) {
  const auto axis = static_cast<std::size_t>(attrs.axis < 0 ? attrs.axis + out.rank() : attrs.axis);
  concat_along(in, axis, dtype_size(out.dtype()), out, false);
}

void kernel_copy(Runtime&, std::span<const Tensor> in, const Attrs&, const Tensor& out) {
  std::memcpy(out.buffer()->data(), in[0].buffer()->data(), out.buffer()->bytes());
}

void kernel_transpose(Runtime&, std::span<const Tensor> in, const Attrs& attrs, const Tensor& out) {
  const Shape& s = in[0].shape();
  const std::size_t rank = s.size();
  std::vector<std::int64_t> in_strides(rank, 1);
  for (std::size_t i = rank; i-- > 1;) in_strides[i - 1] = in_strides[i] * s[i];
  const std::size_t element = dtype_size(in[0].dtype());
  const char* src = static_cast<const char*>(in[0].buffer()->data());
  char* dst = static_cast<char*>(out.buffer()->data());
  std::vector<std::int64_t> index(rank, 0);  // index into the output
  const Shape& os = out.shape();
  for (std::int64_t n = 0; n < out.size(); ++n) {
    std::int64_t from = 0;
    for (std::size_t d = 0; d < rank; ++d) from += index[d] * in_strides[attrs.ints[d]];
    std::memcpy(dst + n * static_cast<std::int64_t>(element), src + from * static_cast<std::int64_t>(element), element);
    for (std::size_t d = rank; d-- > 0;) {
      if (++index[d] < os[d]) break;
      index[d] = 0;
    }
  }
}

void kernel_broadcast_to(Runtime&, std::span<const Tensor> in, const Attrs&, const Tensor& out) {
  std::fill_n(f32(out), out.size(), f32(in[0])[0]);
}

void kernel_take(Runtime&, std::span<const Tensor> in, const Attrs& attrs, const Tensor& out) {
  const Shape& s = in[0].shape();
  const auto axis = static_cast<std::size_t>(attrs.axis < 0 ? attrs.axis + in[0].rank() : attrs.axis);
  const std::int64_t outer = product(s, 0, axis), len = s[axis], inner = product(s, axis + 1, s.size());
  for (std::int64_t o = 0; o < outer; ++o) {
    std::memcpy(f32(out) + o * inner, f32(in[0]) + (o * len + attrs.ints[0]) * inner, static_cast<std::size_t>(inner) * 4);
  }
}

void kernel_slice(Runtime&, std::span<const Tensor> in, const Attrs& attrs, const Tensor& out) {
  const Shape& s = in[0].shape();
  const auto axis = static_cast<std::size_t>(attrs.axis < 0 ? attrs.axis + in[0].rank() : attrs.axis);
  const std::int64_t outer = product(s, 0, axis), len = s[axis], inner = product(s, axis + 1, s.size());
  const std::int64_t begin = attrs.ints[0], size = attrs.ints[1];
  for (std::int64_t o = 0; o < outer; ++o) {
    std::memcpy(f32(out) + o * size * inner, f32(in[0]) + (o * len + begin) * inner,
                static_cast<std::size_t>(size * inner) * 4);
  }
}

void kernel_expand(Runtime&, std::span<const Tensor> in, const Attrs& attrs, const Tensor& out) {
  const Shape& s = out.shape();
  const auto axis = static_cast<std::size_t>(attrs.axis < 0 ? attrs.axis + out.rank() : attrs.axis);
  const std::int64_t outer = product(s, 0, axis), len = s[axis], inner = product(s, axis + 1, s.size());
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t r = 0; r < len; ++r) {
      std::memcpy(f32(out) + (o * len + r) * inner, f32(in[0]) + o * inner, static_cast<std::size_t>(inner) * 4);
    }
  }
}

// ---- gradients -------------------------------------------------------------------------------

// A gradient of an input that was broadcast from one element is the sum over the output.
Tensor unbroadcast(const Tensor& grad, const Tensor& input) {
  if (grad.shape() == input.shape()) return grad;
  return reshape(reduce_sum(grad), input.shape());
}

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
std::vector<Tensor> grad_stack(std::span<const Tensor> in, const Tensor& out, const Tensor& g, const Attrs& attrs) {
  std::vector<Tensor> grads;
  const auto axis = attrs.axis < 0 ? attrs.axis + out.rank() : attrs.axis;
  for (std::size_t i = 0; i < in.size(); ++i) {
    Attrs take;
    take.axis = axis;
    take.has_axis = true;
    take.ints = {static_cast<std::int64_t>(i)};
    grads.push_back(dispatch(g.buffer()->runtime(), op("take"), {g}, take));
  }
  return grads;
}
std::vector<Tensor> grad_concat(std::span<const Tensor> in, const Tensor& out, const Tensor& g, const Attrs& attrs) {
  std::vector<Tensor> grads;
  const auto axis = attrs.axis < 0 ? attrs.axis + out.rank() : attrs.axis;
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

const std::map<std::string, OpDef>& table() {
  static const std::map<std::string, OpDef> ops = [] {
    std::map<std::string, OpDef> t;
    const auto def = [&](OpDef d) { t.emplace(d.name, d); };
    def({.name = "constant", .arity = 0, .infer = infer_constant, .kernel = nullptr, .produces_constant = true});
    def({.name = "fill", .arity = 0, .infer = infer_source, .kernel = kernel_fill});
    def({.name = "range", .arity = 0, .infer = infer_source, .kernel = kernel_range});
    def({.name = "random_normal", .arity = 0, .infer = infer_source, .kernel = kernel_random_normal});
    def({.name = "random_uniform", .arity = 0, .infer = infer_source, .kernel = kernel_random_uniform});
    def({.name = "add", .arity = 2, .infer = infer_binary, .kernel = kernel_binary<Add>, .binary = Add::scalar, .binary_tile = tile_binary<Add>, .grad = grad_add});
    def({.name = "sub", .arity = 2, .infer = infer_binary, .kernel = kernel_binary<Sub>, .binary = Sub::scalar, .binary_tile = tile_binary<Sub>, .grad = grad_sub});
    def({.name = "mul", .arity = 2, .infer = infer_binary, .kernel = kernel_binary<Mul>, .binary = Mul::scalar, .binary_tile = tile_binary<Mul>, .grad = grad_mul});
    def({.name = "div", .arity = 2, .infer = infer_binary, .kernel = kernel_binary<Div>, .binary = Div::scalar, .binary_tile = tile_binary<Div>, .grad = grad_div});
    def({.name = "relu_grad", .arity = 2, .infer = infer_binary, .kernel = kernel_binary<ReluGrad>, .binary = ReluGrad::scalar, .binary_tile = tile_binary<ReluGrad>});
    def({.name = "square", .arity = 1, .infer = infer_unary, .kernel = kernel_unary<Square>, .unary = Square::scalar, .unary_tile = tile_unary<Square>, .grad = grad_square});
    def({.name = "neg", .arity = 1, .infer = infer_unary, .kernel = kernel_unary<Neg>, .unary = Neg::scalar, .unary_tile = tile_unary<Neg>, .grad = grad_neg});
    def({.name = "exp", .arity = 1, .infer = infer_unary, .kernel = kernel_unary<Exp>, .unary = Exp::scalar, .unary_tile = tile_unary<Exp>, .grad = grad_exp});
    def({.name = "tanh", .arity = 1, .infer = infer_unary, .kernel = kernel_unary<Tanh>, .unary = Tanh::scalar, .unary_tile = tile_unary<Tanh>, .grad = grad_tanh});
    def({.name = "relu", .arity = 1, .infer = infer_unary, .kernel = kernel_unary<Relu>, .unary = Relu::scalar, .unary_tile = tile_unary<Relu>, .grad = grad_relu});
    def({.name = "matmul", .arity = 2, .infer = infer_matmul, .kernel = kernel_matmul, .grad = grad_matmul});
    def({.name = "reduce_sum", .arity = 1, .infer = infer_reduce, .kernel = kernel_reduce_sum, .grad = grad_reduce_sum});
    def({.name = "reduce_mean", .arity = 1, .infer = infer_reduce, .kernel = kernel_reduce_mean, .grad = grad_reduce_mean});
    def({.name = "stack", .arity = -1, .infer = infer_stack, .kernel = kernel_stack, .grad = grad_stack});
    def({.name = "concat", .arity = -1, .infer = infer_concat, .kernel = kernel_concat, .grad = grad_concat});
    def({.name = "reshape", .arity = 1, .infer = infer_reshape, .kernel = kernel_copy, .grad = grad_reshape});
    def({.name = "transpose", .arity = 1, .infer = infer_transpose, .kernel = kernel_transpose, .grad = grad_transpose});
    def({.name = "broadcast_to", .arity = 1, .infer = infer_broadcast_to, .kernel = kernel_broadcast_to, .grad = grad_broadcast_to});
    def({.name = "copy", .arity = 1, .infer = infer_copy, .kernel = kernel_copy, .grad = grad_copy});
    def({.name = "take", .arity = 1, .infer = infer_take, .kernel = kernel_take});
    def({.name = "slice", .arity = 1, .infer = infer_slice, .kernel = kernel_slice});
    def({.name = "expand", .arity = 1, .infer = infer_expand, .kernel = kernel_expand});
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
