// Document 004, "Does a simple TensorFlow Python program have a memory leak detectable by Valgrind?".
#include <vector>

#include "scenario_groups.h"
#include "scenario_support.h"

namespace tleak::scenarios {
namespace {

using diagnosis::WorkloadContext;
using namespace runtime;

// Example 1, as written: one call makes 10,000 scalar constants and the program keeps the list in
// `leaky_tensors` while "the rest of the program" runs (fixed: it lets the list go).
void constant_list(WorkloadContext& ctx) {
  TrackedRuntime tracked(ctx);
  Runtime& rt = tracked.rt();
  const std::int64_t count = scaled(ctx, 10000);
  const auto leaky_function = [&] {
    std::vector<Tensor> tensors;
    for (std::int64_t i = 0; i < count; ++i) tensors.push_back(scalar(rt, static_cast<float>(i)));
    return tensors;
  };
  std::vector<Tensor> leaky_tensors;
  if (is_leaky(ctx)) {
    leaky_tensors = leaky_function();
  } else {
    reduce_sum(range(rt, count)).item();  // the values as one tensor, used, then dropped
  }
  const Tensor work = fill(rt, {256}, 1.0f);
  double total = 0;
  for (std::uint64_t i = 0; i < ctx.params().iterations; ++i) {
    total += reduce_sum(tanh(work)).item();  // # ... rest of the program ...
    ctx.mark_iteration();
  }
  (void)total;
  ctx.note(std::to_string(leaky_tensors.size()) + " constants still referenced by leaky_tensors when the program ends");
}

// Example 2, as written (TF1 style): build_graph() in the default graph, run by a session, once
// per iteration. Closing the session does not remove a, b and c from the default graph.
void session_graph(WorkloadContext& ctx) {
  TrackedRuntime tracked(ctx);
  Runtime& rt = tracked.rt();
  rt.disable_eager_execution();
  const auto build_graph = [&] {
    const Tensor a = constant(rt, {1.0f, 2.0f, 3.0f}, {3});
    const Tensor b = constant(rt, {4.0f, 5.0f, 6.0f}, {3});
    return add(a, b);
  };
  std::vector<float> result;
  for (std::uint64_t i = 0; i < ctx.params().iterations; ++i) {
    {
      const Session sess(rt.default_graph());  // with tf.compat.v1.Session() as sess:
      result = sess.run({build_graph()})[0].to_vector();
    }
    if (!is_leaky(ctx)) rt.reset_default_graph();  // tf.compat.v1.reset_default_graph()
    ctx.mark_iteration();
  }
  ctx.note("result [" + std::to_string(result[0]) + ", " + std::to_string(result[1]) + ", " + std::to_string(result[2]) +
           "]; the default graph holds " + std::to_string(rt.default_graph().node_count()) + " nodes and " +
           std::to_string(rt.default_graph().constant_bytes()) + " bytes of constants after the loop");
}

// Example 3: a large host array converted into a tensor.
void host_array_convert(WorkloadContext& ctx) {
  TrackedRuntime tracked(ctx);
  Runtime& rt = tracked.rt();
  const std::int64_t n = scaled(ctx, 1024);
  double total = 0;
  for (std::uint64_t i = 0; i < ctx.params().iterations; ++i) {
    // numpy_leak(): large_array = np.random.rand(n, n); tensor = tf.convert_to_tensor(large_array)
    HostArray large_array(ctx.system(), n * n);
    rt.begin_op("np.random.rand");
    for (std::int64_t k = 0; k < n * n; ++k) large_array.data()[k] = static_cast<float>(k % 97) * 0.01f;
    rt.use(ctx.system(), large_array.data());
    // Copied into the runtime's pool, or wrapped in place (whose reads are reads of the array).
    const Tensor tensor = is_leaky(ctx) ? constant(rt, std::vector<float>(large_array.data(), large_array.data() + n * n), {n, n})
                                        : rt.wrap(large_array.data(), {n, n}, &ctx.system());
    total += reduce_mean(tensor).item();  // "... tensor used in computations ..."
    ctx.mark_iteration();
  }
  (void)total;
}

// Point 2: a tensor's bytes lost inside the runtime's pool.
[[gnu::noinline]] void export_and_forget(Runtime& rt, const Tensor& tensor) {
  // Handed to a C consumer (as an export does) whose deleter is never called.
  void* exported = tensor.buffer()->release();
  rt.begin_op("export");
  (void)exported;
}

void pool_hides_leak(WorkloadContext& ctx) {
  TrackedRuntime tracked(ctx);
  Runtime& rt = tracked.rt();
  const std::int64_t n = scaled(ctx, 10000);
  for (std::uint64_t i = 0; i < ctx.params().iterations; ++i) {
    const Tensor activations = tanh(stateless_random_normal(rt, {n}, i));
    if (is_leaky(ctx) && i == ctx.params().iterations / 2) export_and_forget(rt, activations);
    ctx.mark_iteration();
  }
}

// Point 3: device memory, which host tools cannot see.
[[gnu::noinline]] void export_device_buffer_and_forget(Runtime& rt, const Tensor& tensor) {
  void* exported = tensor.buffer()->release();
  rt.begin_op("export");
  (void)exported;
}

void device_hides_leak(WorkloadContext& ctx) {
  TrackedRuntime tracked(ctx);
  Runtime& rt = tracked.rt();
  const std::int64_t n = scaled(ctx, 256);
  PlacementScope on_device(Placement::kDevice);
  for (std::uint64_t i = 0; i < ctx.params().iterations; ++i) {
    const Tensor features = matmul(stateless_random_normal(rt, {n, n}, i), stateless_random_normal(rt, {n, n}, i + 1));
    if (is_leaky(ctx) && i == ctx.params().iterations / 2) export_device_buffer_and_forget(rt, features);
    ctx.mark_iteration();
  }
}

}  // namespace

void add_valgrind_doc_scenarios(std::vector<Scenario>& out) {
  out.push_back({
      .id = "constant-list",
      .document = "004",
      .summary = "Example 1: one call makes 10,000 scalar constants; the program keeps the list",
      .modes = {"eager"},
      .claim = "Example 1: '#Leak! No references to 'tensors' remain'; Valgrind's detection 'depends heavily "
               "on how the Python garbage collection interacts with TensorFlow's memory management'.",
      .claim_status = "refuted",
      .measures = "Not a leak: `leaky_tensors` holds the list, so the 10,000 constants stay reachable until "
                  "the program ends (memcheck would call them still reachable, not lost). Nothing grows "
                  "either: the list is made once. What tleak reports is retained memory: 39.1 KiB of "
                  "constants never used after they were made and held for the whole run (drag 20 "
                  "iterations). fixed: the values made as one range tensor, used and dropped: bounded.",
      .fix = "Do not keep what you no longer use, and make one tensor of 10,000 values rather than 10,000 tensors.",
      .run = constant_list});
  out.push_back({
      .id = "session-graph",
      .document = "004",
      .summary = "Example 2 (TF1): build_graph() in the default graph, run by a session, once per iteration",
      .modes = {"graph"},
      .default_iterations = 500,
      .claim = "Example 2: 'the memory used for the intermediate tensors a, b and c is typically reclaimed "
               "by the TensorFlow runtime after the session's completion'.",
      .claim_status = "refuted",
      .measures = "False: the session closes, but a, b and c were built in the default graph, which outlives "
                  "every session and keeps its nodes and constants until the program ends or the graph is "
                  "reset. Run once, that is 24 B of constants still reachable at exit; run 500 times, the "
                  "default graph grows by 3 nodes and 24 B per call (notes: 1500 nodes, 12000 bytes of "
                  "constants): growth, like graph-ops-in-loop. fixed: tf.compat.v1.reset_default_graph() "
                  "after each call: bounded, peak 36 B.",
      .fix = "Build the graph once, or reset the default graph (or use a `with tf.Graph().as_default()` "
             "block) per call.",
      .run = session_graph});
  out.push_back({
      .id = "host-array-convert",
      .document = "004",
      .summary = "a large host array converted (copied) into a tensor",
      .modes = {"eager"},
      .claim = "Example 3: the array might be detected as a leak if garbage collection is not triggered "
               "promptly.",
      .claim_status = "refuted",
      .measures = "Both the host array and the tensor are freed every iteration: bounded, no leak. The "
                  "conversion copies, so host memory peaks at two 4 MiB arrays (system heap and pool); "
                  "wrapping the host array without copying halves it.",
      .fix = "Wrap the host array (zero-copy) when the tensor does not outlive it.",
      .run = host_array_convert});
  out.push_back({
      .id = "pool-hides-leak",
      .document = "004",
      .summary = "a tensor's bytes lost inside the runtime's pool, seen by memcheck only through annotations",
      .modes = {"eager"},
      .claim = "Point 2: the runtime's own memory pools make its leaks 'largely opaque to Valgrind unless "
               "TensorFlow itself explicitly exposes debugging hooks'.",
      .claim_status = "partly confirmed",
      .measures = "leaky: one 39.1 KiB tensor is exported and its bytes are never given back: tleak reports "
                  "a true leak at the exporting function. Under `valgrind --leak-check=full` memcheck reports "
                  "the same bytes definitely lost only because tleak's pool registers its blocks with client "
                  "requests; run it again with --no-valgrind-annotations and memcheck sees a mapped chunk and "
                  "reports nothing. fixed: the tensor is not exported; nothing leaks. That holds for pools "
                  "like tleak's (and GPU caching allocators). TensorFlow's default CPU allocator, though, "
                  "is malloc-based, so memcheck does see leaked CPU tensors by default. For Python programs "
                  "the real obstacle is pymalloc, which serves small objects from arenas memcheck sees as a "
                  "few large blocks: run Python under memcheck with PYTHONMALLOC=malloc (see Python programs "
                  "in the README).",
      .fix = "Annotate pools with Valgrind client requests (tleak's pool does), or track them yourself.",
      .run = pool_hides_leak});
  out.push_back({
      .id = "device-hides-leak",
      .document = "004",
      .summary = "a leak in device memory, which host tools cannot see",
      .modes = {"eager"},
      .claim = "Point 3: leaks of GPU memory 'are almost entirely invisible to Valgrind'.",
      .claim_status = "confirmed",
      .measures = "leaky: one 256 KiB device buffer is lost; memcheck sees nothing (the arena is one "
                  "mapping outside the heap) while tleak's device allocator reports the leak and where. "
                  "fixed: every device buffer is freed.",
      .fix = "Track device allocations in the allocator itself.",
      .run = device_hides_leak});
}

}  // namespace tleak::scenarios
