// tleak's own two workloads, written straight against the allocators: a loop that frees everything
// it makes, and a loop that keeps every result in a list. They prove the engine end to end.
#include <cmath>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <utility>
#include <span>
#include <vector>

#include "scenario_groups.h"

namespace tleak::scenarios {
namespace {

using diagnosis::WorkloadContext;

// Owns one float array from an allocator; frees it when it goes out of scope.
class FloatArray {
 public:
  FloatArray(Allocator& owner, void* ptr, std::size_t n) : owner_(&owner), data_(static_cast<float*>(ptr)), n_(n) {}
  FloatArray(FloatArray&& other) noexcept
      : owner_(other.owner_), data_(std::exchange(other.data_, nullptr)), n_(other.n_) {}
  FloatArray& operator=(FloatArray&&) = delete;
  ~FloatArray() { owner_->deallocate(data_); }
  std::span<float> values() { return {data_, n_}; }
  const float* data() const { return data_; }
  Allocator& owner() const { return *owner_; }

 private:
  Allocator* owner_;
  float* data_;
  std::size_t n_;
};

std::size_t floats_for(const WorkloadContext& ctx, std::size_t base) {
  return std::max<std::size_t>(1, static_cast<std::size_t>(static_cast<double>(base) * ctx.params().scale));
}

[[gnu::noinline]] FloatArray load_batch(WorkloadContext& ctx, std::size_t n, std::uint64_t step) {
  FloatArray batch(ctx.host(), ctx.host().allocate(n * sizeof(float)), n);
  ctx.tick();
  ctx.use(batch.owner(), batch.data());
  std::iota(batch.values().begin(), batch.values().end(), static_cast<float>(step));
  return batch;
}

// tanh(x) * 0.5: a temporary that dies inside the step.
[[gnu::noinline]] FloatArray activation(WorkloadContext& ctx, FloatArray& input) {
  FloatArray out(ctx.host(), ctx.host().allocate(input.values().size() * sizeof(float)), input.values().size());
  ctx.tick();
  ctx.use(input.owner(), input.data());
  ctx.use(out.owner(), out.data());
  for (std::size_t i = 0; i < out.values().size(); ++i) out.values()[i] = 0.5f * std::tanh(input.values()[i] * 1e-3f);
  return out;
}

float reduce_sum(WorkloadContext& ctx, FloatArray& input) {
  ctx.tick();
  ctx.use(input.owner(), input.data());
  return std::accumulate(input.values().begin(), input.values().end(), 0.0f);
}

// One result per step, kept by the caller: the growing list of the append loop.
[[gnu::noinline]] FloatArray append_result(WorkloadContext& ctx, FloatArray& activations) {
  const std::size_t n = activations.values().size() / 4;
  FloatArray result(ctx.host(), ctx.host().allocate(n * sizeof(float)), n);
  ctx.tick();
  ctx.use(activations.owner(), activations.data());
  ctx.use(result.owner(), result.data());
  for (std::size_t i = 0; i < n; ++i) result.values()[i] = activations.values()[4 * i];
  return result;
}

void run_clean_loop(WorkloadContext& ctx) {
  const std::size_t n = floats_for(ctx, 16 * 1024);
  double total = 0;
  for (std::uint64_t step = 0; step < ctx.params().iterations; ++step) {
    {
      FloatArray batch = load_batch(ctx, n, step);
      FloatArray act = activation(ctx, batch);
      total += reduce_sum(ctx, act);
    }  // the step's arrays go here, before the iteration ends
    ctx.mark_iteration();
  }
  if (!std::isfinite(total)) throw std::runtime_error("clean-loop: non-finite sum");
}

void run_append_loop(WorkloadContext& ctx) {
  const std::size_t n = floats_for(ctx, 16 * 1024);
  const bool keep_all = ctx.params().variant == "leaky";
  std::vector<FloatArray> kept;  // leaky: every result, freed only when the list dies at the end
  double total = 0;              // fixed: each result is consumed at once and dropped
  for (std::uint64_t step = 0; step < ctx.params().iterations; ++step) {
    {
      FloatArray batch = load_batch(ctx, n, step);
      FloatArray act = activation(ctx, batch);
      FloatArray result = append_result(ctx, act);
      if (keep_all) {
        kept.push_back(std::move(result));
      } else {
        total += reduce_sum(ctx, result);
      }
    }
    ctx.mark_iteration();
  }
  if (!std::isfinite(total)) throw std::runtime_error("append-loop: non-finite sum");
}

}  // namespace

void add_basic_loops(std::vector<Scenario>& out) {
  out.push_back({.id = "clean-loop",
                 .document = "tleak",
                 .summary = "a training-style step whose temporaries all die inside the step",
                 .modes = {"eager"},
                 .default_iterations = 20,
                 .claim = "tleak's own baseline, not from a document: nothing should accumulate.",
                 .claim_status = "",
                 .measures = "Each step allocates a 64 KiB batch and a 64 KiB activation and frees both "
                             "before the step ends: bounded, zero bytes leaked.",
                 .fix = "Nothing to fix.",
                 .run = run_clean_loop});
  out.push_back({.id = "append-loop",
                 .document = "tleak",
                 .summary = "a loop that keeps every step's result in a list until it ends",
                 .modes = {"eager"},
                 .default_iterations = 20,
                 .claim = "tleak's own baseline, not from a document: a list that keeps every result grows.",
                 .claim_status = "",
                 .measures = "leaky: each step appends a 16 KiB result that lives until the list is "
                             "destroyed at teardown, so that site grows by 16 KiB per iteration. "
                             "fixed: each result is reduced and dropped at once; bounded.",
                 .fix = "Keep a running reduction instead of the whole list.",
                 .run = run_append_loop});
}

}  // namespace tleak::scenarios
