#include "tleak/runtime/tensor.h"

#include <atomic>

namespace tleak::runtime {
namespace {

std::uint64_t next_tensor_id() {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

const char* to_string(DType dtype) { return dtype == DType::kFloat32 ? "float32" : "int32"; }
const char* to_string(Placement placement) { return placement == Placement::kHost ? "host" : "device"; }

std::string to_string(const Shape& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

std::int64_t num_elements(const Shape& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

std::size_t dtype_size(DType) { return 4; }

const std::shared_ptr<Buffer>& Tensor::buffer() const {
  if (buffer_ == nullptr) {
    throw std::logic_error(is_symbolic() ? "a symbolic tensor has no data until its graph runs"
                                         : "the tensor is undefined");
  }
  return buffer_;
}

std::vector<float> Tensor::to_vector() const {
  if (dtype() != DType::kFloat32) {
    const auto v = values<std::int32_t>();
    return {v.begin(), v.end()};
  }
  const auto v = values<float>();
  return {v.begin(), v.end()};
}

float Tensor::item() const {
  if (size() != 1) throw ShapeError("item: tensor of shape " + to_string(shape()) + " has more than one element");
  return to_vector()[0];
}

Tensor Tensor::concrete(TensorSpec spec, std::shared_ptr<Buffer> buffer) {
  Tensor t;
  t.spec_ = std::move(spec);
  t.buffer_ = std::move(buffer);
  t.id_ = next_tensor_id();
  return t;
}

Tensor Tensor::symbolic(TensorSpec spec, Graph& graph, int node) {
  Tensor t;
  t.spec_ = std::move(spec);
  t.graph_ = &graph;
  t.node_ = node;
  t.id_ = next_tensor_id();
  return t;
}

Tensor Tensor::shape_only() const {
  Tensor t;
  t.spec_ = spec_;
  t.id_ = id_;
  return t;
}

Tensor Tensor::with_shape(Shape shape) const {
  Tensor t = *this;
  t.spec_.shape = std::move(shape);
  t.id_ = next_tensor_id();
  return t;
}

}  // namespace tleak::runtime
