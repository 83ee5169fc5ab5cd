// Shape inference of every op: the output's spec from the inputs', or a ShapeError naming the op
// and the shapes.
#include <algorithm>
#include <numeric>
#include <string>

#include "op_parts.h"

namespace tleak::runtime::detail::op_parts {
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

}  // namespace

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

}  // namespace tleak::runtime::detail::op_parts
