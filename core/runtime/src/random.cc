#include "tleak/runtime/random.h"

#include <cmath>
#include <cstring>
#include <numbers>

#include "tleak/runtime/runtime.h"

namespace tleak::runtime {
namespace detail {
namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

float uniform01(std::uint64_t key, std::uint64_t counter) {
  return static_cast<float>(splitmix64(key ^ splitmix64(counter)) >> 40) * 0x1.0p-24f;
}

void fill_normal(float* out, std::int64_t n, std::uint64_t key, std::uint64_t counter, float mean, float stddev) {
  for (std::int64_t i = 0; i < n; i += 2) {
    const std::uint64_t c = counter + static_cast<std::uint64_t>(i);
    const float u1 = std::max(uniform01(key, c), 1e-7f), u2 = uniform01(key, c + 1);
    const float radius = std::sqrt(-2.0f * std::log(u1)), angle = 2.0f * std::numbers::pi_v<float> * u2;
    out[i] = mean + stddev * radius * std::cos(angle);
    if (i + 1 < n) out[i + 1] = mean + stddev * radius * std::sin(angle);
  }
}

void fill_uniform(float* out, std::int64_t n, std::uint64_t key, std::uint64_t counter, float low, float high) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = low + (high - low) * uniform01(key, counter + static_cast<std::uint64_t>(i));
}

}  // namespace detail

Generator::Generator(Runtime& rt, std::uint64_t seed) : rt_(&rt) {
  state_ = rt.empty({{4}, DType::kInt32, Placement::kHost}, "rng-state");
  const std::uint32_t words[4] = {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32), 0, 0};
  std::memcpy(state_.buffer()->data(), words, sizeof words);
}

void Generator::reserve(std::uint64_t draws, std::uint64_t* key, std::uint64_t* counter) {
  const std::lock_guard lock(mutex_);
  rt_->use(state_);
  std::uint32_t words[4];
  std::memcpy(words, state_.buffer()->data(), sizeof words);
  *key = words[0] | (std::uint64_t{words[1]} << 32);
  *counter = words[2] | (std::uint64_t{words[3]} << 32);
  const std::uint64_t next = *counter + draws + (draws & 1);  // keep pairs aligned
  words[2] = static_cast<std::uint32_t>(next);
  words[3] = static_cast<std::uint32_t>(next >> 32);
  std::memcpy(state_.buffer()->data(), words, sizeof words);
}

}  // namespace tleak::runtime
