#include "tleak/runtime/runtime.h"

#include "tleak/runtime/random.h"
#include <stdexcept>

#include "tleak/runtime/graph.h"
#include "tleak/runtime/variable.h"

namespace tleak::runtime {

Runtime::Runtime(Allocator& host, Allocator& device, OpObserver* observer)
    : host_(host), device_(device), observer_(observer) {}

// The default graph and the generator's state hold buffers: release them while the allocators
// still exist.
Runtime::~Runtime() {
  if (default_graph_ && GraphScope::process_default() == default_graph_.get()) GraphScope::set_process_default(nullptr);
  default_graph_.reset();
  generator_.reset();
}

void Runtime::disable_eager_execution() {
  if (default_graph_) return;
  if (GraphScope::process_default() != nullptr) throw std::logic_error("another runtime already disabled eager execution");
  default_graph_ = std::make_unique<Graph>(*this, "default");
  GraphScope::set_process_default(default_graph_.get());
}

Graph& Runtime::default_graph() {
  if (!default_graph_) throw std::logic_error("eager execution is enabled: there is no default graph");
  return *default_graph_;
}

void Runtime::reset_default_graph() {
  if (!default_graph_) throw std::logic_error("eager execution is enabled: there is no default graph to reset");
  auto fresh = std::make_unique<Graph>(*this, "default");
  GraphScope::set_process_default(fresh.get());
  default_graph_.swap(fresh);  // the old graph goes with `fresh`
}

std::shared_ptr<Buffer> Runtime::allocate(std::size_t bytes, Placement placement, const char* tag) {
  Allocator& owner = allocator(placement);
  // Zero-element tensors still get a block, so every tensor has an address the tracker knows.
  void* data = owner.allocate(std::max<std::size_t>(bytes, 1), Allocator::kDefaultAlignment, AllocTag{tag});
  return std::make_shared<Buffer>(*this, &owner, data, bytes, placement);
}

Tensor Runtime::empty(const TensorSpec& spec, const char* tag) {
  return Tensor::concrete(spec, allocate(static_cast<std::size_t>(num_elements(spec.shape)) * dtype_size(spec.dtype),
                                         spec.placement, tag));
}

Tensor Runtime::wrap(float* data, Shape shape, const Allocator* owner) {
  const auto bytes = static_cast<std::size_t>(num_elements(shape)) * sizeof(float);
  auto buffer = std::make_shared<Buffer>(*this, nullptr, data, bytes, Placement::kHost);
  if (owner != nullptr) buffer->set_tracked_block(owner, data);
  return Tensor::concrete({std::move(shape), DType::kFloat32, Placement::kHost}, std::move(buffer));
}

Generator& Runtime::generator() {
  std::call_once(generator_made_, [this] { generator_ = std::make_unique<Generator>(*this, 0x5eed); });
  return *generator_;
}

std::vector<GradientTape*>& Runtime::active_tapes() {
  // Per thread, as eager gradient recording is.
  thread_local std::vector<GradientTape*> tapes;
  return tapes;
}

}  // namespace tleak::runtime
