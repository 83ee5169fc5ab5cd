// The JIT: compiles a traced graph into an Executable. Chains of elementwise ops whose
// intermediates have one consumer fuse into one kernel that makes a single pass over memory:
// generated machine code that keeps the running value in a vector register where the CPU and the
// ops allow (fused_code), else a tile interpreter that combines cache-sized tiles of the inputs
// (fused_program); intermediates never materialize either way. Other ops call their kernels (Eigen
// for matmul and reductions). Buffers are assigned as XLA assigns them, by liveness, always: a temp
// takes space a dead one left, and the executable knows the size of the arena one execution needs.
// Each run allocates that arena and frees it when the computation completes (XLA's temporaries
// live for one execution; a cached executable keeps its code and constants, not its temps).
// Outputs get buffers of their own.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tleak/runtime/detail/fused_program.h"
#include "tleak/runtime/graph.h"

namespace tleak::runtime {
namespace detail {
class FusedCode;
}

struct JitOptions {
  // Fused kernels as machine code where the CPU and the ops allow; off, they are interpreted tile
  // by tile (same results, more passes over cache).
  bool generate_code = true;
};

class Executable {
 public:
  // `outputs` are node indices of `graph`; the graph's placeholders are the inputs, in order.
  Executable(const Graph& graph, const std::vector<int>& outputs, JitOptions options);
  ~Executable();
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

  std::vector<Tensor> run(const std::vector<Tensor>& inputs);

  // The temp arena one execution allocates on `placement` (and frees when it completes).
  std::size_t arena_bytes(Placement placement) const;
  std::size_t fused_kernel_count() const;
  std::size_t fused_op_count() const;  // ops folded into fused kernels
  std::size_t generated_kernel_count() const;  // fused kernels running as machine code
  std::size_t temp_count() const;      // values placed in the arenas

 private:
  struct Step {
    int node;                           // the node whose value this step produces
    const detail::OpDef* op = nullptr;  // unfused: the op to run
    std::vector<int> inputs;            // nodes read
    detail::FusedProgram program;       // fused: what the kernel computes (empty when unfused)
    std::shared_ptr<const detail::FusedCode> code;  // fused and generated; else interpreted
    std::string name;
  };
  struct Slot {
    bool temp = false;
    Placement placement = Placement::kHost;
    std::size_t offset = 0;
  };

  void plan_storage(const std::vector<int>& outputs);
  void run_fused(const Step& step, std::span<const Tensor> in, const Tensor& out) const;

  Runtime& rt_;
  JitOptions options_;
  std::vector<Node> nodes_;
  std::vector<int> outputs_;
  std::vector<Step> steps_;
  std::vector<Slot> slots_;  // by node
  std::size_t arena_size_[2] = {0, 0};
};

}  // namespace tleak::runtime
