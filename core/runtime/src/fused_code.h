// Machine code for a fused elementwise kernel: the JIT's program becomes one loop over the
// elements whose values stay in vector registers, so the kernel's only memory traffic is reading
// its inputs and writing its output once. Where a program cannot be generated (no AVX on this CPU,
// an op without a vector instruction here such as exp or tanh, more live values than registers, an
// output shorter than one vector), the tile interpreter runs it instead.
#pragma once

#include <cstdint>
#include <memory>

#include "tleak/runtime/detail/fused_program.h"

namespace tleak::runtime::detail {

class FusedCode {
 public:
  static constexpr std::int64_t kLanes = 8;  // floats per iteration of the generated loop

  // Code for `program` over outputs of `elements` floats; null when it is left to the interpreter.
  static std::unique_ptr<FusedCode> generate(const FusedProgram& program, std::int64_t elements);

  virtual ~FusedCode() = default;
  // Elements [0, n) of the output, n a multiple of kLanes.
  virtual void run(const float* const* inputs, float* out, std::int64_t n) const = 0;
};

}  // namespace tleak::runtime::detail
