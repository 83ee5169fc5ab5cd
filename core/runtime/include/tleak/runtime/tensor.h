// Tensors of the miniature runtime: a shape, a dtype, a placement and a reference-counted buffer
// whose bytes come from one of the runtime's allocators. Copies share the buffer; the bytes go
// back to the allocator when the last tensor referring to them goes (eager semantics).
//
// A tensor is either concrete (it has a buffer) or symbolic: a value of a graph under
// construction, produced by an op added to that graph. Ops accept both (see ops.h).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "tleak/allocator.h"

namespace tleak::runtime {

class Runtime;
class Graph;

enum class DType { kFloat32, kInt32 };
enum class Placement { kHost, kDevice };
using Shape = std::vector<std::int64_t>;

const char* to_string(DType dtype);
const char* to_string(Placement placement);
std::string to_string(const Shape& shape);  // "[2, 3]"
std::int64_t num_elements(const Shape& shape);
std::size_t dtype_size(DType dtype);

// A shape, dtype or placement that an op cannot accept. The message names the op and the shapes.
class ShapeError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct TensorSpec {
  Shape shape;
  DType dtype = DType::kFloat32;
  Placement placement = Placement::kHost;
  bool operator==(const TensorSpec&) const = default;
};

// Bytes of one tensor value. Owned bytes return to `owner` on destruction; wrapped bytes (a
// caller's array) or views into a JIT arena have no owner and are never freed here.
class Buffer {
 public:
  Buffer(Runtime& runtime, Allocator* owner, void* data, std::size_t bytes, Placement placement)
      : runtime_(&runtime), owner_(owner), data_(data), bytes_(bytes), placement_(placement) {}
  ~Buffer() {
    if (owner_ != nullptr) owner_->deallocate(data_);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  // Hands the bytes to the caller (as an export to a C API does): this buffer no longer frees them,
  // and the caller must give them back to `owner()`. Dropping the pointer leaks them.
  void* release() {
    owner_ = nullptr;
    return data_;
  }
  Placement placement() const { return placement_; }
  Allocator* owner() const { return owner_; }
  Runtime& runtime() const { return *runtime_; }
  // The allocation the tracker knows these bytes by (an arena view reports its arena).
  const void* tracked_block() const { return tracked_block_ != nullptr ? tracked_block_ : data_; }
  const Allocator* tracked_owner() const { return tracked_owner_ != nullptr ? tracked_owner_ : owner_; }
  void set_tracked_block(const Allocator* owner, const void* block) {
    tracked_owner_ = owner;
    tracked_block_ = block;
  }

 private:
  Runtime* runtime_;
  Allocator* owner_;
  void* data_;
  std::size_t bytes_;
  Placement placement_;
  const Allocator* tracked_owner_ = nullptr;
  const void* tracked_block_ = nullptr;
};

class Tensor {
 public:
  Tensor() = default;

  bool defined() const { return buffer_ != nullptr || graph_ != nullptr; }
  bool is_symbolic() const { return graph_ != nullptr; }
  const TensorSpec& spec() const { return spec_; }
  const Shape& shape() const { return spec_.shape; }
  DType dtype() const { return spec_.dtype; }
  Placement placement() const { return spec_.placement; }
  std::int64_t size() const { return num_elements(spec_.shape); }
  std::int64_t rank() const { return static_cast<std::int64_t>(spec_.shape.size()); }
  // Same for every copy of this tensor value; identifies it on gradient tapes.
  std::uint64_t id() const { return id_; }

  // Concrete tensors only; throws std::logic_error on a symbolic one.
  const std::shared_ptr<Buffer>& buffer() const;
  template <class T>
  std::span<const T> values() const {
    return {static_cast<const T*>(buffer()->data()), static_cast<std::size_t>(size())};
  }
  template <class T>
  std::span<T> mutable_values() const {
    return {static_cast<T*>(buffer()->data()), static_cast<std::size_t>(size())};
  }
  // Copies the values out, as converting to a host array does.
  std::vector<float> to_vector() const;
  float item() const;  // the value of a one-element float tensor

  // Symbolic tensors only.
  Graph* graph() const { return graph_; }
  int node() const { return node_; }

  static Tensor concrete(TensorSpec spec, std::shared_ptr<Buffer> buffer);
  static Tensor symbolic(TensorSpec spec, Graph& graph, int node);
  // Same buffer, different shape (reshape shares bytes); keeps a new identity.
  Tensor with_shape(Shape shape) const;
  // The spec and identity without the values: what a gradient that reads only shapes needs, so a
  // tape need not keep the bytes alive. Not defined(); reading its values throws.
  Tensor shape_only() const;

 private:
  TensorSpec spec_;
  std::shared_ptr<Buffer> buffer_;
  Graph* graph_ = nullptr;
  int node_ = -1;
  std::uint64_t id_ = 0;
};

}  // namespace tleak::runtime
