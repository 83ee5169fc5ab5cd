// Op dispatch (eager or graph building) and the public op functions.
#include "tleak/runtime/ops.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "tleak/runtime/detail/op_def.h"
#include "tleak/runtime/graph.h"
#include "tleak/runtime/random.h"
#include "tleak/runtime/tape.h"

namespace tleak::runtime {
namespace detail {
namespace {

thread_local const Placement* t_placement_scope = nullptr;

}  // namespace

const Placement* current_placement_scope() { return t_placement_scope; }
Placement default_placement() { return t_placement_scope != nullptr ? *t_placement_scope : Placement::kHost; }

Tensor dispatch(Runtime& rt, const OpDef& def, std::vector<Tensor> inputs, Attrs attrs) {
  if (def.arity >= 0 && static_cast<int>(inputs.size()) != def.arity) {
    throw ShapeError(std::string(def.name) + ": expects " + std::to_string(def.arity) + " inputs, got " +
                     std::to_string(inputs.size()));
  }
  for (const Tensor& t : inputs) {
    if (!t.defined()) throw ShapeError(std::string(def.name) + ": an input is undefined");
  }
  Graph* graph = GraphScope::current();
  for (const Tensor& t : inputs) {
    if (!t.is_symbolic()) continue;
    if (graph != nullptr && graph != t.graph()) {
      throw ShapeError(std::string(def.name) + ": inputs belong to different graphs");
    }
    graph = t.graph();
  }

  // All inputs on one placement: the scope's (copying others there), else the first input's.
  if (!inputs.empty() && std::string_view(def.name) != "copy") {
    const Placement target = t_placement_scope != nullptr ? *t_placement_scope : inputs[0].placement();
    for (Tensor& t : inputs) {
      if (t.placement() == target) continue;
      if (t_placement_scope == nullptr) {
        throw ShapeError(std::string(def.name) + ": inputs are on host and device; copy one with to_host or to_device");
      }
      t = target == Placement::kHost ? to_host(t) : to_device(t);
    }
  }

  std::vector<TensorSpec> specs;
  for (const Tensor& t : inputs) specs.push_back(t.spec());
  const TensorSpec spec = def.infer(def, specs, attrs);

  if (graph != nullptr) {
    Node node;
    node.op = &def;
    for (const Tensor& t : inputs) node.inputs.push_back((t.is_symbolic() ? t : graph->add_constant(t)).node());
    node.attrs = std::move(attrs);
    node.spec = spec;
    return graph->add_node(std::move(node));
  }

  rt.begin_op(def.name);
  Tensor out;
  if (std::string_view(def.name) == "reshape") {
    out = inputs[0].with_shape(spec.shape);  // shares the bytes
  } else {
    out = rt.empty(spec);
    def.kernel(rt, inputs, attrs, out);
  }
  for (const Tensor& t : inputs) rt.use(t);
  rt.use(out);
  for (GradientTape* tape : rt.active_tapes()) tape->record(def, inputs, attrs, out);
  return out;
}

}  // namespace detail

using detail::Attrs;
using detail::dispatch;
using detail::op;

PlacementScope::PlacementScope(Placement placement) : previous_(detail::t_placement_scope), placement_(placement) {
  detail::t_placement_scope = &placement_;
}
PlacementScope::~PlacementScope() { detail::t_placement_scope = previous_; }

namespace {

Runtime& runtime_of(const Tensor& t) { return t.is_symbolic() ? t.graph()->runtime() : t.buffer()->runtime(); }

Tensor unary(const char* name, const Tensor& a) { return dispatch(runtime_of(a), op(name), {a}, {}); }
Tensor binary(const char* name, const Tensor& a, const Tensor& b) {
  return dispatch(runtime_of(a), op(name), {a, b}, {});
}

// A constant is computed now, in every mode: its bytes belong to the tensor, or, while a graph is
// being built, to the Const node that holds it.
template <class T>
Tensor make_constant(Runtime& rt, const std::vector<T>& values, Shape shape, DType dtype) {
  if (static_cast<std::int64_t>(values.size()) != num_elements(shape)) {
    throw ShapeError("constant: " + std::to_string(values.size()) + " values do not fill shape " + to_string(shape));
  }
  rt.begin_op("constant");
  Tensor t = rt.empty({std::move(shape), dtype, detail::default_placement()}, "constant");
  std::memcpy(t.buffer()->data(), values.data(), values.size() * sizeof(T));
  rt.use(t);
  if (Graph* graph = GraphScope::current()) return graph->add_constant(t);
  return t;
}

Tensor source(Runtime& rt, const char* name, Shape shape, Attrs attrs) {
  for (std::int64_t d : shape) {
    if (d < 0) throw ShapeError(std::string(name) + ": negative dimension in shape " + to_string(shape));
  }
  attrs.shape = std::move(shape);
  attrs.placement = detail::default_placement();
  return dispatch(rt, op(name), {}, std::move(attrs));
}

}  // namespace

Tensor constant(Runtime& rt, const std::vector<float>& values, Shape shape) {
  return make_constant(rt, values, std::move(shape), DType::kFloat32);
}
Tensor constant_int(Runtime& rt, const std::vector<std::int32_t>& values, Shape shape) {
  return make_constant(rt, values, std::move(shape), DType::kInt32);
}
Tensor scalar(Runtime& rt, float value) { return constant(rt, {value}, {}); }

Tensor fill(Runtime& rt, Shape shape, float value) {
  Attrs attrs;
  attrs.a = value;
  return source(rt, "fill", std::move(shape), attrs);
}
Tensor range(Runtime& rt, std::int64_t n) { return source(rt, "range", {n}, {}); }
Tensor range_int(Runtime& rt, std::int64_t n) {
  Attrs attrs;
  attrs.dtype = DType::kInt32;
  return source(rt, "range", {n}, attrs);
}

namespace {

// A draw of `name` ("random_normal" or "random_uniform") with parameters a and b, from `generator`'s
// state, or, without one, as a pure function of `seed`.
Tensor random_source(Runtime& rt, const char* name, Shape shape, float a, float b, Generator* generator,
                     std::uint64_t seed) {
  Attrs attrs;
  attrs.a = a;
  attrs.b = b;
  attrs.generator = generator;
  attrs.seed = seed;
  return source(rt, name, std::move(shape), attrs);
}

}  // namespace

Tensor random_normal(Generator& generator, Shape shape, float mean, float stddev) {
  return random_source(generator.runtime(), "random_normal", std::move(shape), mean, stddev, &generator, 0);
}
Tensor random_uniform(Generator& generator, Shape shape, float low, float high) {
  return random_source(generator.runtime(), "random_uniform", std::move(shape), low, high, &generator, 0);
}
Tensor random_normal(Runtime& rt, Shape shape, float mean, float stddev) {
  return random_normal(rt.generator(), std::move(shape), mean, stddev);
}
Tensor random_uniform(Runtime& rt, Shape shape, float low, float high) {
  return random_uniform(rt.generator(), std::move(shape), low, high);
}
Tensor stateless_random_normal(Runtime& rt, Shape shape, std::uint64_t seed, float mean, float stddev) {
  return random_source(rt, "random_normal", std::move(shape), mean, stddev, nullptr, seed);
}
Tensor stateless_random_uniform(Runtime& rt, Shape shape, std::uint64_t seed, float low, float high) {
  return random_source(rt, "random_uniform", std::move(shape), low, high, nullptr, seed);
}

Tensor add(const Tensor& a, const Tensor& b) { return binary("add", a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary("sub", a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary("mul", a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary("div", a, b); }
Tensor square(const Tensor& a) { return unary("square", a); }
Tensor neg(const Tensor& a) { return unary("neg", a); }
Tensor exp(const Tensor& a) { return unary("exp", a); }
Tensor tanh(const Tensor& a) { return unary("tanh", a); }
Tensor relu(const Tensor& a) { return unary("relu", a); }
Tensor matmul(const Tensor& a, const Tensor& b) { return binary("matmul", a, b); }

Tensor reduce_sum(const Tensor& a) { return unary("reduce_sum", a); }
Tensor reduce_mean(const Tensor& a) { return unary("reduce_mean", a); }
Tensor reduce_sum(const Tensor& a, std::int64_t axis) {
  Attrs attrs;
  attrs.axis = axis;
  attrs.has_axis = true;
  return dispatch(runtime_of(a), op("reduce_sum"), {a}, attrs);
}
Tensor reduce_mean(const Tensor& a, std::int64_t axis) {
  Attrs attrs;
  attrs.axis = axis;
  attrs.has_axis = true;
  return dispatch(runtime_of(a), op("reduce_mean"), {a}, attrs);
}

Tensor stack(const std::vector<Tensor>& tensors, std::int64_t axis) {
  if (tensors.empty()) throw ShapeError("stack: needs at least one tensor");
  Attrs attrs;
  attrs.axis = axis;
  attrs.has_axis = true;
  return dispatch(runtime_of(tensors[0]), op("stack"), tensors, attrs);
}
Tensor concat(const std::vector<Tensor>& tensors, std::int64_t axis) {
  if (tensors.empty()) throw ShapeError("concat: needs at least one tensor");
  Attrs attrs;
  attrs.axis = axis;
  attrs.has_axis = true;
  return dispatch(runtime_of(tensors[0]), op("concat"), tensors, attrs);
}

Tensor reshape(const Tensor& a, Shape shape) {
  Attrs attrs;
  attrs.shape = std::move(shape);
  return dispatch(runtime_of(a), op("reshape"), {a}, attrs);
}
Tensor transpose(const Tensor& a) {
  std::vector<std::int64_t> perm(static_cast<std::size_t>(a.rank()));
  std::iota(perm.rbegin(), perm.rend(), 0);
  return transpose(a, perm);
}
Tensor transpose(const Tensor& a, std::vector<std::int64_t> perm) {
  Attrs attrs;
  attrs.ints = std::move(perm);
  return dispatch(runtime_of(a), op("transpose"), {a}, attrs);
}
Tensor broadcast_to(const Tensor& a, Shape shape) {
  Attrs attrs;
  attrs.shape = std::move(shape);
  return dispatch(runtime_of(a), op("broadcast_to"), {a}, attrs);
}

Tensor to_device(const Tensor& a) {
  Attrs attrs;
  attrs.placement = Placement::kDevice;
  return dispatch(runtime_of(a), op("copy"), {a}, attrs);
}
Tensor to_host(const Tensor& a) {
  Attrs attrs;
  attrs.placement = Placement::kHost;
  return dispatch(runtime_of(a), op("copy"), {a}, attrs);
}

}  // namespace tleak::runtime
