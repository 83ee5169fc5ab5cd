// A runtime over a real pool and device arena, with helpers to make random inputs and compare
// against straightforward references.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "tleak/device_allocator.h"
#include "tleak/pool_allocator.h"
#include "tleak/runtime/runtime_all.h"

namespace tleak::runtime::testing {

class RuntimeTest : public ::testing::Test {
 protected:
  RuntimeTest() : device_({.name = "device", .capacity = std::size_t{256} << 20}), rt_(pool_, device_) {}

  Tensor random_tensor(Shape shape, float low = -1, float high = 1) {
    std::uniform_real_distribution<float> dist(low, high);
    std::vector<float> values(static_cast<std::size_t>(num_elements(shape)));
    for (float& v : values) v = dist(rng_);
    return constant(rt_, values, std::move(shape));
  }

  static void expect_near(const std::vector<float>& actual, const std::vector<float>& expected, float tolerance = 1e-5f) {
    ASSERT_EQ(actual.size(), expected.size());
    for (std::size_t i = 0; i < actual.size(); ++i) {
      ASSERT_NEAR(actual[i], expected[i], tolerance * std::max(1.0f, std::abs(expected[i]))) << "element " << i;
    }
  }

  PoolAllocator pool_;
  DeviceAllocator device_;
  Runtime rt_;
  std::mt19937 rng_{42};
};

}  // namespace tleak::runtime::testing
