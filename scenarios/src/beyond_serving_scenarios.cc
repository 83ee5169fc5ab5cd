// Patterns users hit in serving code, beyond the documents: results kept alive by reference
// cycles, and state cached per thread by a server that makes a thread per request.
#include <atomic>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "dense_layer.h"
#include "scenario_groups.h"
#include "scenario_support.h"
#include "worker_pool.h"

namespace tleak::scenarios {
namespace {

using diagnosis::WorkloadContext;
using namespace runtime;

// Each prediction's result is caught in a reference cycle (an object holding it refers back to
// itself), so reference counting cannot free it and it waits for the cyclic collector, which runs
// every 8 calls. Fixed: no cycle; the result goes when it is dropped.
void result_reference_cycle(WorkloadContext& ctx) {
  TrackedRuntime tracked(ctx);
  Runtime& rt = tracked.rt();
  const std::int64_t batch = scaled(ctx, 256);
  Dense model(rt, 5, 10);
  const Tensor input = stateless_random_normal(rt, {batch, 5}, 1);
  constexpr std::uint64_t kCollectEvery = 8;
  // What a reference cycle around each result keeps alive until the cyclic collector runs.
  std::vector<Tensor> awaiting_collection;
  double consumed = 0;
  for (std::uint64_t i = 0; i < ctx.params().iterations; ++i) {
    const Tensor intermediate_tensor = model(input);
    if (is_leaky(ctx)) {
      awaiting_collection.push_back(intermediate_tensor);
      if (awaiting_collection.size() == kCollectEvery) awaiting_collection.clear();  // gc.collect()
    } else {
      consumed += reduce_sum(intermediate_tensor).item();  // consumed, then dropped
    }
    ctx.mark_iteration();
  }
  (void)consumed;
}

// Serving code around a shared session: per-thread state (a feed staging buffer) cached by thread.
class ServingSession {
 public:
  ServingSession(Runtime& rt, Graph& graph, Tensor input, Tensor output, std::int64_t batch)
      : rt_(rt), session_(graph), input_(std::move(input)), output_(std::move(output)), batch_(batch) {}

  float predict(std::uint64_t seed) {
    const Tensor staging = state_for_this_thread();
    rt_.begin_op("stage_feed");
    rt_.use(staging);
    const Tensor feed = stateless_random_normal(rt_, {batch_, 5}, seed);
    return reduce_sum(session_.run({output_}, {{input_, feed}})[0]).item();
  }
  // Per-thread state released when its thread ends (the fix for one-thread-per-request servers).
  void release_this_thread() {
    std::lock_guard lock(mutex_);
    per_thread_.erase(thread_serial());
  }
  std::size_t cached_threads() const {
    std::lock_guard lock(mutex_);
    return per_thread_.size();
  }

 private:
  Tensor state_for_this_thread() {
    std::lock_guard lock(mutex_);
    auto [it, fresh] = per_thread_.try_emplace(thread_serial());
    if (fresh) it->second = fill(rt_, {batch_, 1024}, 0.0f);  // a staging buffer for this thread's feeds
    return it->second;
  }

  // Keyed by a number no later thread gets again: thread ids are reused once a thread is joined.
  static std::uint64_t thread_serial() {
    static std::atomic<std::uint64_t> next{0};
    thread_local const std::uint64_t serial = next++;
    return serial;
  }

  Runtime& rt_;
  Session session_;
  Tensor input_, output_;
  std::int64_t batch_;
  mutable std::mutex mutex_;
  std::map<std::uint64_t, Tensor> per_thread_;
};

// A shared session used from a new thread per request batch, by serving code that caches state per
// thread; fixed: a pool of four workers that release their state when they end.
void per_thread_cache(WorkloadContext& ctx) {
  TrackedRuntime tracked(ctx);
  Runtime& rt = tracked.rt();
  const std::int64_t batch = scaled(ctx, 4);
  Dense dense(rt, 5, 10);
  Graph graph(rt, "serving");
  Tensor input, output;
  {
    GraphScope scope(graph);
    input = graph.placeholder({{batch, 5}, DType::kFloat32, Placement::kHost}, "input");
    output = dense(input);
  }
  graph.finalize();
  ServingSession serving(rt, graph, input, output, batch);
  constexpr int kRequestsPerThread = 5;
  if (is_leaky(ctx)) {
    for (std::uint64_t i = 0; i < ctx.params().iterations; ++i) {
      std::thread worker([&] {  // a new thread for this batch of requests
        for (int r = 0; r < kRequestsPerThread; ++r) serving.predict(i * 100 + static_cast<std::uint64_t>(r));
      });
      worker.join();
      ctx.mark_iteration();
    }
  } else {
    WorkerPool pool(4, [&](std::uint64_t request) { serving.predict(request); }, [&] { serving.release_this_thread(); });
    for (std::uint64_t i = 0; i < ctx.params().iterations; ++i) {
      std::vector<std::uint64_t> requests;
      for (int r = 0; r < kRequestsPerThread; ++r) requests.push_back(i * 100 + static_cast<std::uint64_t>(r));
      pool.serve_batch(requests);
      ctx.mark_iteration();
    }
  }
  ctx.note(std::to_string(serving.cached_threads()) + " per-thread states still cached after the loop");
}

}  // namespace

void add_beyond_serving_scenarios(std::vector<Scenario>& out) {
  out.push_back({
      .id = "result-reference-cycle",
      .document = "beyond",
      .summary = "each result caught in a reference cycle waits for the cyclic collector (every 8 calls)",
      .modes = {"eager"},
      .claim = "Not from a document, but what document 003's Example 2 fears: a result that reference "
               "counting cannot free because something in a cycle refers to it.",
      .claim_status = "",
      .measures = "leaky: results wait for the collector, dead from the moment they are made: a sawtooth "
                  "that never grows past 8 results, retained with a drag of up to 7 iterations. fixed: "
                  "without the cycle each result goes when it is dropped: bounded.",
      .fix = "Break the cycle (a weak reference, or clear the back-reference) rather than wait for gc.collect().",
      .run = result_reference_cycle});
  out.push_back({
      .id = "per-thread-cache",
      .document = "beyond",
      .summary = "serving code caches state per thread; a new thread per request batch keeps adding entries",
      .modes = {"graph"},
      .claim = "Not from a document: per-thread caches (staging buffers, thread-local sessions) keyed by "
               "thread are common in serving code.",
      .claim_status = "",
      .measures = "leaky: a new thread per batch of requests adds one 16 KiB staging buffer each, never "
                  "released: growth of 16 KiB per iteration. fixed: four pooled workers hold four buffers "
                  "while they serve and release them when they end: bounded.",
      .fix = "Serve from a fixed thread pool, or release per-thread state when its thread ends.",
      .run = per_thread_cache});
}

}  // namespace tleak::scenarios
