// Document 004, "Does a simple TensorFlow Python program have a memory leak detectable by Valgrind?".
#include <vector>

#include "scenario_groups.h"
#include "scenario_support.h"

namespace tleak::scenarios {
namespace {

using diagnosis::WorkloadContext;
using namespace runtime;

// Example 1: a list of 10,000 scalar constants, returned and kept.
void constant_list(WorkloadContext& ctx) {
  TrackedRuntime tracked(ctx);
  Runtime& rt = tracked.rt();
  const std::int64_t total = scaled(ctx, 10000);
  const std::int64_t per_call = std::max<std::int64_t>(1, total / static_cast<std::int64_t>(ctx.params().iterations));
  std::vector<Tensor> leaky_tensors;
  for (std::uint64_t call = 0; call < ctx.params().iterations; ++call) {
    std::vector<Tensor> tensors;  // leaky_function()
    for (std::int64_t i = 0; i < per_call; ++i) tensors.push_back(scalar(rt, static_cast<float>(i)));
    if (is_leaky(ctx)) leaky_tensors.insert(leaky_tensors.end(), tensors.begin(), tensors.end());
    ctx.mark_iteration();
  }
  ctx.note(std::to_string(leaky_tensors.size()) + " constants still referenced when the loop ends");
}

// Example 2: a small graph run in a session.
void session_graph(WorkloadContext& ctx) {
  TrackedRuntime tracked(ctx);
  Runtime& rt = tracked.rt();
  const auto build_graph = [&] {
    const Tensor a = constant(rt, {1.0f, 2.0f, 3.0f}, {3});
    const Tensor b = constant(rt, {4.0f, 5.0f, 6.0f}, {3});
    return add(a, b);
  };
  std::vector<float> result;
  if (is_leaky(ctx)) {
    // The document's program, once per iteration: a graph, a session, one run, then all of it goes.
    for (std::uint64_t i = 0; i < ctx.params().iterations; ++i) {
      Graph graph(rt);
      Tensor c;
      {
        GraphScope scope(graph);
        c = build_graph();
      }
      result = Session(graph).run({c})[0].to_vector();
      ctx.mark_iteration();
    }
  } else {
    Graph graph(rt);
    Tensor c;
    {
      GraphScope scope(graph);
      c = build_graph();
    }
    graph.finalize();
    const Session sess(graph);
    for (std::uint64_t i = 0; i < ctx.params().iterations; ++i) {
      result = sess.run({c})[0].to_vector();
      ctx.mark_iteration();
    }
  }
  ctx.note("result [" + std::to_string(result[0]) + ", " + std::to_string(result[1]) + ", " + std::to_string(result[2]) + "]");
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
      .summary = "a list of 10,000 scalar constants kept",
      .modes = {"eager"},
      .claim = "Example 1: 'Leak! No references to tensors remain'; Valgrind's detection 'depends heavily' on "
               "the garbage collector.",
      .measures = "The list is referenced (the document's own `leaky_tensors` holds it), so nothing is "
                  "lost: the 10,000 constants are live until the list goes at teardown. tleak reports that "
                  "as growth (500 constants, 2,000 requested bytes, per iteration), not a leak; memcheck would "
                  "call the pool blocks reachable. fixed: the list is dropped after each call: bounded.",
      .fix = "Do not keep what you no longer use; this was never a leak a tool should flag as lost.",
      .run = constant_list});
  out.push_back({
      .id = "session-graph",
      .document = "004",
      .summary = "a small graph run in a session",
      .modes = {"graph"},
      .claim = "Example 2: memory for a, b and c 'is typically reclaimed by the runtime after the session's "
               "completion'; Valgrind is unlikely to detect any issue.",
      .measures = "As clean as the document says: each graph's constants go with the graph, bounded, "
                  "nothing leaked, in both variants (once per iteration, or built once and finalized).",
      .fix = "Nothing to fix.",
      .run = session_graph});
  out.push_back({
      .id = "host-array-convert",
      .document = "004",
      .summary = "a large host array converted (copied) into a tensor",
      .modes = {"eager"},
      .claim = "Example 3: the array might be detected as a leak if garbage collection is not triggered "
               "promptly.",
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
      .measures = "leaky: one 39 KiB tensor is exported and its bytes are never given back: tleak reports "
                  "a true leak at the exporting function. Under `valgrind --leak-check=full` memcheck reports "
                  "the same bytes definitely lost only because tleak's pool registers its blocks with client "
                  "requests; run it again with --no-valgrind-annotations and memcheck sees a mapped chunk and "
                  "reports nothing. fixed: the tensor is not exported; nothing leaks.",
      .fix = "Annotate pools with Valgrind client requests (tleak's pool does), or track them yourself.",
      .run = pool_hides_leak});
  out.push_back({
      .id = "device-hides-leak",
      .document = "004",
      .summary = "a leak in device memory, which host tools cannot see",
      .modes = {"eager"},
      .claim = "Point 3: leaks of GPU memory 'are almost entirely invisible to Valgrind'.",
      .measures = "leaky: one 256 KiB device buffer is lost; memcheck sees nothing (the arena is one "
                  "mapping outside the heap) while tleak's device allocator reports the leak and where. "
                  "fixed: every device buffer is freed.",
      .fix = "Track device allocations in the allocator itself.",
      .run = device_hides_leak});
}

}  // namespace tleak::scenarios
