// A dense layer, y = x W + b, with its variables created once: the model of the prediction and
// serving scenarios.
#pragma once

#include <vector>

#include "tleak/runtime/runtime_all.h"

namespace tleak::scenarios {

struct Dense {
  Dense(runtime::Runtime& rt, std::int64_t in, std::int64_t out)
      : w(rt, "dense/kernel", runtime::stateless_random_normal(rt, {in, out}, 7, 0, 0.1f)),
        b(rt, "dense/bias", runtime::fill(rt, {out}, 0.0f)) {}
  runtime::Tensor operator()(const runtime::Tensor& x) const {
    return runtime::add(runtime::matmul(x, w.read()), broadcast_row(x, b.read()));
  }
  // The bias added to every row: stacked copies of b, one per row of x.
  static runtime::Tensor broadcast_row(const runtime::Tensor& x, const runtime::Tensor& bias) {
    std::vector<runtime::Tensor> rows(static_cast<std::size_t>(x.shape()[0]), bias);
    return runtime::stack(rows);
  }
  runtime::Variable w, b;
};

}  // namespace tleak::scenarios
