// The 8-op elementwise chains the runtime benchmark times and the memory tests measure, written
// once. Bodies for Function: two inputs, the chain's result.
#pragma once

#include <vector>

#include "tleak/runtime/runtime_all.h"

namespace tleak::runtime::chains {

// Memory-bound: eight cheap arithmetic ops, where fusion saves the passes over memory. Each step
// rebinds one variable, so eagerly an op's input and output are all that is held.
inline std::vector<Tensor> arithmetic8(const std::vector<Tensor>& a, const std::vector<std::int64_t>&) {
  Tensor t = a[0];
  t = add(t, a[1]);
  t = mul(t, a[1]);
  t = sub(t, a[1]);
  t = square(t);
  t = neg(t);
  t = relu(t);
  t = mul(t, a[1]);
  t = add(t, a[1]);
  return {t};
}

// The same chain written as function bodies usually are, one local per step: in eager mode every
// intermediate lives until the function returns; traced and fused, none is ever made.
inline std::vector<Tensor> arithmetic8_locals(const std::vector<Tensor>& a, const std::vector<std::int64_t>&) {
  const Tensor sum = add(a[0], a[1]);
  const Tensor scaled = mul(sum, a[1]);
  const Tensor shifted = sub(scaled, a[1]);
  const Tensor squared = square(shifted);
  const Tensor negated = neg(squared);
  const Tensor rectified = relu(negated);
  const Tensor rescaled = mul(rectified, a[1]);
  return {add(rescaled, a[1])};
}

// Compute-bound: tanh and exp dominate, so saved memory passes matter less (and the fused kernel
// is interpreted: no generated code has them).
inline std::vector<Tensor> transcendental8(const std::vector<Tensor>& a, const std::vector<std::int64_t>&) {
  Tensor t = a[0];
  t = add(t, a[1]);
  t = mul(t, a[1]);
  t = tanh(t);
  t = square(t);
  t = sub(t, a[1]);
  t = exp(t);
  t = neg(t);
  t = relu(t);
  return {t};
}

}  // namespace tleak::runtime::chains
