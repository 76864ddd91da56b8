// Small spaces and data shared by the DARTS tests.
#pragma once
#include <yaml-cpp/yaml.h>

#include <random>

#include "harness/arch/mobilenet_space.h"
#include "harness/data/fashion_mnist.h"

namespace xnn::nas::testing {

// 8x8 grey inputs (silu stem and head: smooth, for finite differences), two stages (the second with an optional block):
// 4 + 4 + (4 + skip) ops.
inline arch::SearchSpace micro_space() {
  return arch::parse_search_space(YAML::Load(R"(
input: [1, 8, 8]
classes: 3
stem: {channels: 4, stride: 1, activation: silu}
head: {channels: 16, activation: silu}
block_choices: {kernels: [3, 5], expansions: [1, 2], se: [false], activations: [relu, silu]}
stages:
  - {depths: [1], channels: 8, stride: 2}
  - {depths: [1, 2], channels: 8, stride: 1}
)"),
                                  "micro_space");
}

// `count` random 8x8 images with random labels in [0, classes).
inline data::Dataset random_dataset(int64_t count, int classes, uint64_t seed, int64_t side = 8) {
  std::mt19937_64 rng(seed);
  data::Dataset ds;
  ds.count = count;
  ds.rows = ds.cols = side;
  ds.num_classes = classes;
  for (int64_t i = 0; i < count * side * side; ++i) ds.images.push_back(static_cast<uint8_t>(rng() & 0xff));
  for (int64_t i = 0; i < count; ++i) ds.labels.push_back(static_cast<uint8_t>(rng() % static_cast<uint64_t>(classes)));
  return ds;
}

}  // namespace xnn::nas::testing
