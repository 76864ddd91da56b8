// Small classifier models described block by block in YAML (the `model.builder` section of a
// training config), built straight into the engine IR with seeded initial weights:
//
//   builder:
//     input: [1, 28, 28]          # C, H, W of one sample (the batch dim is symbolic)
//     classes: 10
//     blocks:
//       - {type: conv, out: 32, kernel: 3, stride: 1, bn: true, act: relu}
//       - {type: depthwise, kernel: 3, stride: 2, bn: true, act: relu6}
//       - {type: pointwise, out: 64, bn: true, act: hardswish}
//       - {type: maxpool, kernel: 2}          # also avgpool; stride defaults to kernel
//       - {type: dropout, p: 0.2}
//       - {type: gap}                         # global average pool + flatten
//       - {type: flatten}
//       - {type: fc, out: 128, act: relu}
//     # a final fc to `classes` logits is appended
//
// Activations: none, relu, relu6, leakyrelu, hardswish, sigmoid, silu. Convolutions pad to keep
// the size ("same" for odd kernels). Weights follow PyTorch's default initialisation
// (kaiming-uniform with a = √5, i.e. U(±1/√fan_in), and the same bound for biases; BatchNorm
// γ = 1, β = 0), drawn from a seeded generator, so a config and seed give one exact model.
#pragma once
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/graph.h"

namespace xnn::train {

struct BlockSpec {
  std::string type;       // conv | depthwise | pointwise | maxpool | avgpool | dropout | gap | flatten | fc
  int64_t out = 0;        // conv/pointwise/fc output channels or features
  int64_t kernel = 3;
  int64_t stride = 1;
  bool bn = false;
  std::string act = "none";
  float p = 0.5f;         // dropout ratio
  std::string location;   // FILE:LINE:COL, for errors
};

struct BuilderSpec {
  std::vector<int64_t> input;  // C, H, W
  int64_t classes = 10;
  std::vector<BlockSpec> blocks;
};

// Parses the `builder` mapping; errors name `file`, the line and the key, and what was expected.
BuilderSpec parse_builder_spec(const YAML::Node& node, const std::string& file);

// The model: input "input" [batch, C, H, W], output "logits" [batch, classes].
std::shared_ptr<Model> build_model(const BuilderSpec& spec, uint64_t seed);

}  // namespace xnn::train
