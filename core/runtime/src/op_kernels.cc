// Kernels of the ops that are not elementwise (those are in elementwise_ops.h). A kernel works on
// concrete, already-allocated tensors; dispatch (ops.cc) allocates, records and builds graphs.
#include <Eigen/Core>
#include <algorithm>
#include <cstring>
#include <numeric>

#include "op_parts.h"
#include "tleak/runtime/random.h"

namespace tleak::runtime::detail::op_parts {
namespace {

std::int64_t product(const Shape& s, std::size_t from, std::size_t to) {
  std::int64_t p = 1;
  for (std::size_t i = from; i < to && i < s.size(); ++i) p *= s[i];
  return p;
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

using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

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

}  // namespace

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

void kernel_random_normal(Runtime& rt, std::span<const Tensor> in, const Attrs& attrs, const Tensor& out) {
  kernel_random(rt, in, attrs, out, true);
}
void kernel_random_uniform(Runtime& rt, std::span<const Tensor> in, const Attrs& attrs, const Tensor& out) {
  kernel_random(rt, in, attrs, out, false);
}

void kernel_matmul(Runtime&, std::span<const Tensor> in, const Attrs&, const Tensor& out) {
  const auto m = in[0].shape()[0], k = in[0].shape()[1], n = in[1].shape()[1];
  Eigen::Map<const RowMajor> a(f32(in[0]), m, k), b(f32(in[1]), k, n);
  Eigen::Map<RowMajor> c(f32(out), m, n);
  c.noalias() = a * b;
}

void kernel_reduce_sum(Runtime&, std::span<const Tensor> in, const Attrs& attrs, const Tensor& out) {
  kernel_reduce(in, attrs, out, false);
}
void kernel_reduce_mean(Runtime&, std::span<const Tensor> in, const Attrs& attrs, const Tensor& out) {
  kernel_reduce(in, attrs, out, true);
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

}  // namespace tleak::runtime::detail::op_parts
