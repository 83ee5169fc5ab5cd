// Patterns users hit in practice beyond the five documents, one per mode.
#include <algorithm>
#include <memory>
#include <vector>

#include "scenario_groups.h"
#include "scenario_support.h"

namespace tleak::scenarios {
namespace {

using diagnosis::WorkloadContext;
using namespace runtime;

// Eager: a persistent tape kept for the whole training loop records every step's intermediates.
void persistent_tape(WorkloadContext& ctx) {
  TrackedRuntime tracked(ctx);
  Runtime& rt = tracked.rt();
  const std::int64_t n = scaled(ctx, 64);
  Variable w(rt, "w", stateless_random_normal(rt, {n, n}, 1, 0, 0.1f));
  const Tensor x = stateless_random_normal(rt, {n, n}, 2);
  std::unique_ptr<GradientTape> run_tape;
  if (is_leaky(ctx)) run_tape = std::make_unique<GradientTape>(rt, /*persistent=*/true);
  for (std::uint64_t i = 0; i < ctx.params().iterations; ++i) {
    std::unique_ptr<GradientTape> step_tape;
    if (!is_leaky(ctx)) step_tape = std::make_unique<GradientTape>(rt);
    GradientTape& tape = is_leaky(ctx) ? *run_tape : *step_tape;
    const Tensor loss = reduce_mean(square(tanh(matmul(x, w.read()))));
    const Tensor grad = tape.gradient(loss, std::vector<Variable>{w})[0];
    w.assign_sub(mul(grad, scalar(rt, 0.1f)));
    ctx.mark_iteration();
  }
  if (run_tape) ctx.note(std::to_string(run_tape->recorded_ops()) + " ops held by the persistent tape at the end");
}

// Graph: a traced function captures a large tensor from outside; the trace keeps it alive.
void traced_capture(WorkloadContext& ctx) {
  TrackedRuntime tracked(ctx);
  Runtime& rt = tracked.rt();
  const std::int64_t n = scaled(ctx, 512);
  Tensor embedding = stateless_random_normal(rt, {n, n}, 3);
  Function lookup_leaky(rt, "score", [&](const std::vector<Tensor>& a, const std::vector<std::int64_t>&) {
    return std::vector<Tensor>{reduce_sum(matmul(a[0], embedding))};  // captured: frozen into the trace
  }, mode_of(ctx));
  Function lookup_fixed(rt, "score", [](const std::vector<Tensor>& a, const std::vector<std::int64_t>&) {
    return std::vector<Tensor>{reduce_sum(matmul(a[0], a[1]))};  // passed in: the caller owns it
  }, mode_of(ctx));
  const Tensor query = stateless_random_normal(rt, {1, n}, 4);
  for (std::uint64_t i = 0; i < ctx.params().iterations; ++i) {
    // The first quarter of the run scores queries; then the program is done with the embedding.
    if (embedding.defined()) {
      if (is_leaky(ctx)) {
        lookup_leaky({query});
      } else {
        lookup_fixed({query, embedding});
      }
    }
    if (i + 1 == std::max<std::uint64_t>(ctx.params().iterations / 4, 1)) embedding = Tensor();
    reduce_sum(tanh(query));  // the rest of the program's work goes on
    ctx.mark_iteration();
  }
}

// JIT: a one-off compile at a huge warm-up shape stays cached with the constants specialised for
// that shape (a mask as large as the input), which no later call uses.
void jit_warmup_cache(WorkloadContext& ctx) {
  TrackedRuntime tracked(ctx);
  Runtime& rt = tracked.rt();
  const std::int64_t small = scaled(ctx, 64), huge = scaled(ctx, 1024);
  Function step(rt, "step", [&rt](const std::vector<Tensor>& a, const std::vector<std::int64_t>&) {
    const Tensor mask = constant(rt, std::vector<float>(static_cast<std::size_t>(a[0].size()), 1.0f), a[0].shape());
    return std::vector<Tensor>{reduce_sum(tanh(mul(a[0], mask)))};
  }, mode_of(ctx));
  step({stateless_random_normal(rt, {huge, huge}, 1)});  // warm-up at the largest shape
  if (!is_leaky(ctx)) step.clear_cache();                // done with that shape
  for (std::uint64_t i = 0; i < ctx.params().iterations; ++i) {
    step({stateless_random_normal(rt, {small, small}, i)});
    ctx.mark_iteration();
  }
  ctx.note(std::to_string(step.cache_size()) + " executables cached at the end");
}

// Graph: a changing Python value passed as a non-tensor argument is part of the signature, so every
// call traces a new graph, and each cached trace keeps its own constant.
void retrace_python_value(WorkloadContext& ctx) {
  TrackedRuntime tracked(ctx);
  Runtime& rt = tracked.rt();
  const std::int64_t width = scaled(ctx, 1024);
  Function by_value(rt, "increment_by_value", [&](const std::vector<Tensor>& a, const std::vector<std::int64_t>& s) {
    const Tensor offset = constant(rt, std::vector<float>(static_cast<std::size_t>(width), static_cast<float>(s[0])), a[0].shape());
    return std::vector<Tensor>{add(a[0], offset)};
  }, mode_of(ctx));
  Function by_tensor(rt, "increment_by_tensor", [](const std::vector<Tensor>& a, const std::vector<std::int64_t>&) {
    return std::vector<Tensor>{add(a[0], a[1])};
  }, mode_of(ctx));
  const Tensor x = fill(rt, {width}, 1.0f);
  int wrong = 0;
  for (std::uint64_t i = 1; i <= ctx.params().iterations; ++i) {
    const Tensor y = is_leaky(ctx) ? by_value({x}, {static_cast<std::int64_t>(i)})[0] : by_tensor({x, scalar(rt, static_cast<float>(i))})[0];
    wrong += y.to_vector()[0] != 1.0f + static_cast<float>(i);
    ctx.mark_iteration();
  }
  const Function& f = is_leaky(ctx) ? by_value : by_tensor;
  ctx.note(std::to_string(f.trace_count()) + " trace(s) for " + std::to_string(ctx.params().iterations) + " calls (" +
           std::to_string(wrong) + " wrong results)");
}

}  // namespace

void add_beyond_scenarios(std::vector<Scenario>& out) {
  out.push_back({
      .id = "persistent-tape",
      .document = "beyond",
      .summary = "a persistent gradient tape kept for the whole training loop",
      .modes = {"eager"},
      .claim = "Not from a document: persistent tapes are a common way to take several gradients.",
      .claim_status = "",
      .measures = "leaky: one persistent tape records every step's ops and holds their inputs and "
                  "outputs until it is destroyed: growth of each step's intermediates. fixed: a tape "
                  "per step, released after its gradient: bounded.",
      .fix = "Use a non-persistent tape per step, or destroy a persistent one as soon as its gradients are taken.",
      .run = persistent_tape});
  out.push_back({
      .id = "traced-capture",
      .document = "beyond",
      .summary = "a traced function captures a large tensor; the cached trace keeps it after the caller drops it",
      .modes = {"graph", "jit"},
      .claim = "Not from a document: values captured by a traced function are frozen into it as constants.",
      .claim_status = "",
      .measures = "leaky: the 1 MiB embedding is a constant of the cached trace; when the program drops "
                  "its handle a quarter of the way in, the bytes stay, unused, until the function goes at teardown: "
                  "retained. fixed: passed as an argument, the caller's handle is the only owner.",
      .fix = "Pass large tensors as arguments instead of capturing them.",
      .run = traced_capture});
  out.push_back({
      .id = "retrace-python-value",
      .document = "beyond",
      .summary = "a changing Python value passed to a traced function retraces it on every call",
      .modes = {"graph", "jit"},
      .claim = "Not from a document, though near document 001's Example 2: a Python number that changes "
               "each call, passed where a tensor should be.",
      .claim_status = "",
      .measures = "leaky: each new value is a new signature, so every call traces (and caches) a new graph "
                  "holding its own 4 KiB constant: growth of 4 KiB per iteration until the function goes. "
                  "fixed: the value passed as a tensor traces once.",
      .fix = "Pass changing values as tensors; keep Python arguments to the few values that select a graph.",
      .run = retrace_python_value});
  out.push_back({
      .id = "jit-warmup-cache",
      .document = "beyond",
      .summary = "a one-off JIT compile at a huge warm-up shape stays cached with its shape's constants",
      .modes = {"jit"},
      .claim = "Not from a document: warm-up runs at the largest shape are common in serving.",
      .claim_status = "",
      .measures = "leaky: the warm-up executable keeps its 4 MiB mask constant, specialised for the "
                  "1,024 x 1,024 shape; no later call uses it, and it is held to the end: retained. Its "
                  "temporaries are not what stays: they went when the warm-up call completed. fixed: the "
                  "cache is cleared after warm-up.",
      .fix = "Clear or bound the compile cache after warm-up; keep only shapes you will serve.",
      .run = jit_warmup_cache});
}

}  // namespace tleak::scenarios
