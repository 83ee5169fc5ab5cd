// Document 000, "Does TensorFlow with XLA exhibit a memory leak?": compiled (JIT) computations.
#include <cmath>
#include <vector>

#include "scenario_groups.h"
#include "scenario_support.h"

namespace tleak::scenarios {
namespace {

using diagnosis::WorkloadContext;
using namespace runtime;

// Example 1: a compiled function makes a large random tensor; the loop rebinds one handle.
void xla_rebind_loop(WorkloadContext& ctx) {
  TrackedRuntime tracked(ctx);
  Runtime& rt = tracked.rt();
  const std::int64_t n = scaled(ctx, 1024);
  Function compute_large_tensor(rt, "compute_large_tensor", [&](const std::vector<Tensor>&, const std::vector<std::int64_t>& s) {
    return std::vector<Tensor>{random_normal(rt, {s[0], s[0]})};
  }, mode_of(ctx));
  Tensor large_tensor;
  double checksum = 0;
  for (std::uint64_t i = 0; i < ctx.params().iterations; ++i) {
    // The document's `del large_tensor`: the old value goes before the new one is made.
    if (!is_leaky(ctx)) large_tensor = Tensor();
    large_tensor = compute_large_tensor({}, {n})[0];
    checksum += reduce_mean(large_tensor).item();  // "... perform operations with large_tensor ..."
    ctx.mark_iteration();
  }
  if (!std::isfinite(checksum)) throw std::runtime_error("xla-rebind-loop: non-finite values");
}

// Explanation and example 2: temps of a compiled computation are held until it completes; the
// caller keeps every result.
void xla_held_until_complete(WorkloadContext& ctx) {
  TrackedRuntime tracked(ctx);
  Runtime& rt = tracked.rt();
  const std::int64_t n = scaled(ctx, 256);
  const auto body = [](const std::vector<Tensor>& a, const std::vector<std::int64_t>&) {
    Tensor h = a[0];
    for (int layer = 0; layer < 6; ++layer) h = tanh(matmul(h, a[1]));  // six large temps
    return std::vector<Tensor>{reduce_mean(h, 0)};
  };
  Function compiled(rt, "compiled_computation", body, mode_of(ctx), {.reuse_buffers = !is_leaky(ctx)});
  const Tensor input = stateless_random_normal(rt, {n, n}, 1);
  const Tensor weights = stateless_random_normal(rt, {n, n}, 2, 0, 1.0f / std::sqrt(static_cast<float>(n)));
  std::vector<Tensor> kept;
  for (std::uint64_t i = 0; i < ctx.params().iterations; ++i) {
    Tensor result = compiled({input, weights})[0];
    if (is_leaky(ctx)) kept.push_back(result);  // the fix is the document's `del result`
    ctx.mark_iteration();
  }
  if (const Executable* exe = compiled.last_executable()) {
    ctx.note("compiled arena: " + std::to_string(exe->arena_bytes(Placement::kHost)) + " bytes for " +
             std::to_string(exe->temp_count()) + " temps (" + (is_leaky(ctx) ? "no reuse" : "liveness-based reuse") + ")");
  }
  ctx.note(std::to_string(kept.size()) + " results kept by the caller");
}

// Example 3: a large matmul intermediate inside a compiled function on the device.
void xla_large_intermediate(WorkloadContext& ctx) {
  TrackedRuntime tracked(ctx);
  Runtime& rt = tracked.rt();
  const std::int64_t n = scaled(ctx, 1024);
  const auto leaky_body = [](const std::vector<Tensor>& a, const std::vector<std::int64_t>&) {
    const Tensor intermediate = matmul(a[0], a[0]);  // n x n on the device
    return std::vector<Tensor>{reduce_sum(reduce_mean(intermediate, 0))};
  };
  // mean over rows of (A A) is (mean over rows of A) A: the n x n intermediate never exists.
  const auto fixed_body = [](const std::vector<Tensor>& a, const std::vector<std::int64_t>&) {
    const Tensor row_mean = reshape(reduce_mean(a[0], 0), {1, -1});
    return std::vector<Tensor>{reduce_sum(matmul(row_mean, a[0]))};
  };
  Function process_data(rt, "process_data", is_leaky(ctx) ? Function::Body(leaky_body) : Function::Body(fixed_body), mode_of(ctx));
  Tensor data;
  {
    PlacementScope on_device(Placement::kDevice);
    data = stateless_random_normal(rt, {n, n}, 3, 0, 1.0f / static_cast<float>(n));
  }
  float result = 0;
  for (std::uint64_t i = 0; i < ctx.params().iterations; ++i) {
    result = process_data({data})[0].item();
    ctx.mark_iteration();
  }
  ctx.note("result " + std::to_string(result) + " (the same in both variants, up to rounding)");
}

// The lifecycle of compiled computations: one executable per input shape, cached.
void xla_recompile_shapes(WorkloadContext& ctx) {
  TrackedRuntime tracked(ctx);
  Runtime& rt = tracked.rt();
  const std::int64_t base = scaled(ctx, 3584);
  Function step(rt, "step", [&](const std::vector<Tensor>& a, const std::vector<std::int64_t>&) {
    // A constant of the input's length: each trace owns one, as shape-specialised code does.
    const Tensor scale = constant(rt, std::vector<float>(static_cast<std::size_t>(a[0].size()), 0.5f), a[0].shape());
    return std::vector<Tensor>{reduce_sum(tanh(mul(a[0], scale)))};
  }, mode_of(ctx));
  for (std::uint64_t i = 0; i < ctx.params().iterations; ++i) {
    // A new length every call (lengths cycle through a range of 1,024).
    std::int64_t length = base + static_cast<std::int64_t>(i * 37 % 1024);
    if (!is_leaky(ctx)) {
      std::int64_t bucket = 1;
      while (bucket < length) bucket *= 2;  // pad up to a power of two: few distinct shapes
      length = bucket;
    }
    step({stateless_random_uniform(rt, {length}, i)});
    ctx.mark_iteration();
  }
  ctx.note(std::to_string(step.cache_size()) + " executables cached after " +
           std::to_string(ctx.params().iterations) + " calls");
}

}  // namespace

void add_xla_scenarios(std::vector<Scenario>& out) {
  out.push_back({
      .id = "xla-rebind-loop",
      .document = "000",
      .summary = "a compiled function makes a large random tensor each iteration; one handle is rebound",
      .modes = {"jit", "graph", "eager"},
      .claim = "Example 1: without `del large_tensor` the loop 'continuously consumes memory without "
               "releasing intermediate results', 'simulating a memory leak'.",
      .measures = "Rebinding frees the previous tensor as soon as the new one is assigned: memory is "
                  "bounded in both variants, with no growth and nothing leaked. Without the release the "
                  "old and new tensors coexist while the new one is made, so the peak is two tensors "
                  "instead of one (4 MiB each at scale 1).",
      .fix = "Releasing the handle first (`del`) halves the peak; it was never a leak.",
      .run = xla_rebind_loop});
  out.push_back({
      .id = "xla-held-until-complete",
      .document = "000",
      .summary = "a compiled computation holds all its temps until it completes; the caller keeps every result",
      .modes = {"jit"},
      .claim = "Memory allocated inside a compiled subgraph is held until the computation completes, "
               "which looks like a leak; Example 2's `del result` forces the memory back.",
      .measures = "leaky: compiled without buffer reuse, every temp has its own slot of an arena the "
                  "cached executable keeps between calls, and the kept results grow by 1 KiB per call. "
                  "fixed: liveness-based reuse needs a sixth of the arena (512 KiB instead of 3 MiB at "
                  "scale 1, reported in the notes), and dropped results leave nothing growing. The arena is retained, not leaked: it goes with the executable.",
      .fix = "Compile with buffer reuse and drop results you do not need.",
      .run = xla_held_until_complete});
  out.push_back({
      .id = "xla-large-intermediate",
      .document = "000",
      .summary = "a large matmul intermediate on the device inside a compiled function",
      .modes = {"jit", "graph", "eager"},
      .default_iterations = 10,
      .claim = "Example 3: placing the reduce_mean on the CPU 'effectively reduces peak memory "
               "consumption' of the large intermediate.",
      .measures = "The n x n matmul result is what costs device memory (4 MiB at scale 1, in the compiled "
                  "arena). Moving only the reduction to the host does not remove it: the device still "
                  "holds it, and the host gets a copy of the same size. tleak's fix rewrites the "
                  "computation (row means first, then a 1 x n by n x n product), so no n x n "
                  "intermediate exists: device peak drops to a row.",
      .fix = "Reduce before multiplying (mean(A A, 0) = mean(A, 0) A) or fuse the reduction; a host "
             "placement alone moves bytes, it does not remove them.",
      .run = xla_large_intermediate});
  out.push_back({
      .id = "xla-recompile-shapes",
      .document = "000",
      .summary = "a new input shape every call compiles and caches a new executable",
      .modes = {"jit", "graph"},
      .claim = "Failing to manage the lifecycle of compiled computations can exhaust memory, mimicking a leak.",
      .measures = "leaky: every call has a new length, so every call traces, compiles and caches a new "
                  "executable with its own arena and constants: growth until the cache is cleared at "
                  "teardown. fixed: lengths padded to powers of two (4,096 or 8,192) hit two cached "
                  "executables: bounded.",
      .fix = "Bucket (pad) input shapes so the set of compiled shapes is small, or bound the cache.",
      .run = xla_recompile_shapes});
}

}  // namespace tleak::scenarios
