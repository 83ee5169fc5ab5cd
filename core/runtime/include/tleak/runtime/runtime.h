// The runtime context: which allocators hold host and device bytes, who hears about ops and buffer
// uses (the tracker, through an OpObserver), the default random generator and, once eager
// execution is disabled, the process's default graph. Every op's output buffer is allocated here.
#pragma once

#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "tleak/allocator.h"
#include "tleak/runtime/tensor.h"

namespace tleak::runtime {

class GradientTape;
class Graph;
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

  // The default generator, made on first use (from any thread).
  Generator& generator();

  // TF1's `disable_eager_execution()`: from now on, op calls on any thread outside a GraphScope
  // append to this runtime's default graph, which lives until reset_default_graph() or the
  // runtime goes. One runtime at a time may do this (the default graph is process-wide).
  void disable_eager_execution();
  // Throws std::logic_error while eager execution is enabled.
  Graph& default_graph();
  // TF1's `reset_default_graph()`: a fresh default graph; the old one (its nodes, constants and
  // variables collection) is freed.
  void reset_default_graph();

  // Gradient tapes recording on this thread, innermost last (managed by GradientTape).
  std::vector<GradientTape*>& active_tapes();

 private:
  Allocator& host_;
  Allocator& device_;
  OpObserver* observer_;
  std::once_flag generator_made_;
  std::unique_ptr<Generator> generator_;
  std::unique_ptr<Graph> default_graph_;
};

}  // namespace tleak::runtime
