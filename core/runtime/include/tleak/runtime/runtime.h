// The runtime context: which allocators hold host and device bytes, who hears about ops and buffer
// uses (the tracker, through an OpObserver), the default random generator and the collection of
// variables. Every op's output buffer is allocated here.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "tleak/allocator.h"
#include "tleak/runtime/tensor.h"

namespace tleak::runtime {

class GradientTape;
class VariableRegistry;
class Generator;

// Hears one on_op per op executed and one on_use per buffer the op reads or writes.
class OpObserver {
 public:
  virtual ~OpObserver() = default;
  virtual void on_op(std::string_view op) = 0;
  virtual void on_use(const Allocator& owner, const void* block) = 0;
};

class Runtime {
 public:
  Runtime(Allocator& host, Allocator& device, OpObserver* observer = nullptr);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  Allocator& allocator(Placement placement) { return placement == Placement::kHost ? host_ : device_; }
  std::shared_ptr<Buffer> allocate(std::size_t bytes, Placement placement, const char* tag = "tensor");
  Tensor empty(const TensorSpec& spec, const char* tag = "tensor");
  // Wraps a caller's host array without copying; the caller keeps it alive and owns it. Uses of
  // the tensor are uses of the array's block from `owner`, when given.
  Tensor wrap(float* data, Shape shape, const Allocator* owner = nullptr);

  void begin_op(std::string_view name) {
    if (observer_ != nullptr) observer_->on_op(name);
  }
  void use(const Buffer& buffer) {
    if (observer_ != nullptr && buffer.tracked_owner() != nullptr) {
      observer_->on_use(*buffer.tracked_owner(), buffer.tracked_block());
    }
  }
  void use(const Tensor& tensor) { use(*tensor.buffer()); }
  // A kernel's own buffer (scratch, a host array) read or written by the current op.
  void use(const Allocator& owner, const void* block) {
    if (observer_ != nullptr) observer_->on_use(owner, block);
  }

  Generator& generator();
  VariableRegistry& variables();

  // Gradient tapes recording on this thread, innermost last (managed by GradientTape).
  std::vector<GradientTape*>& active_tapes();

 private:
  Allocator& host_;
  Allocator& device_;
  OpObserver* observer_;
  std::unique_ptr<Generator> generator_;
  std::unique_ptr<VariableRegistry> variables_;
};

}  // namespace tleak::runtime
