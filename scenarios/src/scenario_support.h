// What every runtime scenario shares: a runtime whose ops and buffer uses reach the tracker, the
// scaled sizes, and host arrays (the numpy arrays of the documents) on the system heap.
#pragma once

#include <algorithm>
#include <cstring>
#include <string>

#include "tleak/diagnosis/workload.h"
#include "tleak/runtime/runtime_all.h"

namespace tleak::scenarios {

// A runtime over the workload's allocators that reports every op and buffer use to the tracker.
class TrackedRuntime final : public runtime::OpObserver {
 public:
  explicit TrackedRuntime(diagnosis::WorkloadContext& ctx) : ctx_(ctx), rt_(ctx.host(), ctx.device(), this) {}
  runtime::Runtime& rt() { return rt_; }
  void on_op(std::string_view) override { ctx_.tick(); }
  void on_use(const Allocator& owner, const void* block) override { ctx_.use(owner, block); }

 private:
  diagnosis::WorkloadContext& ctx_;
  runtime::Runtime rt_;
};

inline bool is_leaky(const diagnosis::WorkloadContext& ctx) { return ctx.params().variant == "leaky"; }

inline std::int64_t scaled(const diagnosis::WorkloadContext& ctx, std::int64_t base) {
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(static_cast<double>(base) * ctx.params().scale));
}

inline runtime::Mode mode_of(const diagnosis::WorkloadContext& ctx) {
  const std::string& m = ctx.params().mode;
  return m == "jit" ? runtime::Mode::kJit : m == "graph" ? runtime::Mode::kGraph : runtime::Mode::kEager;
}

// A float array on the system heap: what converting a tensor to a host (numpy) array produces.
class HostArray {
 public:
  HostArray(Allocator& heap, std::int64_t n)
      : heap_(&heap), data_(static_cast<float*>(heap.allocate(static_cast<std::size_t>(n) * sizeof(float), 64, {"host-array"}))), n_(n) {}
  HostArray(HostArray&& other) noexcept : heap_(other.heap_), data_(std::exchange(other.data_, nullptr)), n_(other.n_) {}
  HostArray& operator=(HostArray&& other) noexcept {
    std::swap(heap_, other.heap_);
    std::swap(data_, other.data_);
    std::swap(n_, other.n_);
    return *this;
  }
  ~HostArray() {
    if (data_ != nullptr) heap_->deallocate(data_);
  }
  float* data() const { return data_; }
  std::int64_t size() const { return n_; }

  // Copies a tensor's values out, as .numpy() does (an op that reads the tensor).
  static HostArray from(runtime::Runtime& rt, Allocator& heap, const runtime::Tensor& t) {
    rt.begin_op("to_host_array");
    rt.use(t);
    HostArray a(heap, t.size());
    std::memcpy(a.data_, t.buffer()->data(), static_cast<std::size_t>(t.size()) * sizeof(float));
    rt.use(heap, a.data_);
    return a;
  }

 private:
  Allocator* heap_;
  float* data_;
  std::int64_t n_;
};

}  // namespace tleak::scenarios
