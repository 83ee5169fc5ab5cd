// Random numbers from a counter-based generator (splitmix64 of key and counter, Box-Muller for
// normals). The stateful Generator keeps its key and counter in a small int32 tensor that every
// draw reads and advances; the stateless ops take the seed as their only state.
#pragma once

#include <cstdint>
#include <mutex>

#include "tleak/runtime/tensor.h"

namespace tleak::runtime {

class Generator {
 public:
  Generator(Runtime& rt, std::uint64_t seed);
  // The state tensor: [key low, key high, counter low, counter high] as int32.
  const Tensor& state() const { return state_; }
  Runtime& runtime() const { return *rt_; }
  // Reads the key and counter from the state tensor and advances the counter by `draws`. Safe from
  // many threads at once (each gets its own draws), as stateful random ops are in TensorFlow.
  void reserve(std::uint64_t draws, std::uint64_t* key, std::uint64_t* counter);

 private:
  Runtime* rt_;
  Tensor state_;
  std::mutex mutex_;
};

namespace detail {
// Uniform in [0, 1) for draw `counter` of stream `key`.
float uniform01(std::uint64_t key, std::uint64_t counter);
// n normals from draws counter, counter + 1, ... (two draws per pair of values).
void fill_normal(float* out, std::int64_t n, std::uint64_t key, std::uint64_t counter, float mean, float stddev);
void fill_uniform(float* out, std::int64_t n, std::uint64_t key, std::uint64_t counter, float low, float high);
}  // namespace detail

}  // namespace tleak::runtime
