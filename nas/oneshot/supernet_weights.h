// The weight store of a one-shot supernet (SPOS, Guo et al. 2020): every candidate choice of
// every block position owns its tensors, the stem, head and classifier are shared by all
// paths. A path (an Arch of the space) is realised by building it with build_arch_model and
// pointing its initialisers at the stored tensors (no copy: a Tensor shares its buffer), so
// training a path updates the store in place.
//
// Keys. build_arch_model names block tensors "stage<s>.block<b>.<rest>"; the store keys them
// "stage<s>.block<b>/k<kernel>e<expansion>[se]/<rest>": the kernel, expansion and SE switch
// change the tensors' shapes or set, the activation does not (it shares the choice's weights).
// Other tensors (stem.*, head.*, classifier.*) keep their names. Only float tensors of rank >= 1
// are stored (BatchNorm running statistics included); scalars such as Clip bounds stay the
// built model's.
//
// Sharing across choices (WeightSharing). SPOS gives each choice its own tensors, so with 3
// kernels x 3 expansions x SE on/off a block's tensors get 1/18 of the updates, and the inherited
// accuracy of a subnet says little about how it trains (measured: nas/README.md). Two coarser
// keyings share the tensors whose shapes do not depend on the other decisions:
//   se         "k<kernel>e<expansion>": SE on and off share the block's convolutions (the SE
//              tensors exist only in SE paths); the projection's BatchNorm, re-calibrated per
//              subnet, absorbs the SE gate's scale.
//   pointwise  the depthwise convolution (and its BatchNorm) keyed "k<kernel>e<expansion>", the
//              expansion, SE and projection tensors "e<expansion>": the 1x1 convolutions are
//              shared by every kernel size and SE switch of the same expansion (6x the updates).
// Shapes agree by construction, so paths still alias the store without copies.
//
// Splitting (few-shot NAS, Zhao et al. 2021). One supernet over very different subnets couples
// them: measured here (nas/README.md, 2026-12-07), the stride-2-stem paths of a supernet over both
// stem strides scored 81.7% inherited against 84.8% in a supernet of those paths alone, because
// every block tensor also served the 4x larger feature maps of the stride-1 paths. With
// SupernetSplit::kStemStride every key (stem, blocks, head, classifier) is prefixed "s<stride>/":
// one sub-supernet per stem stride, the paths of each stride alias only their own tensors.
//
// Width. The supernet has ONE width multiplier: channel counts (and so every shape) depend on
// it, and slicing the widest tensors (OFA-style) would couple the widths' training in ways SPOS
// does not study; a fixed width keeps every stored tensor exactly the shape its path builds.
// Resolution and depth are shared freely: no weight shape depends on them (blocks past a
// path's depth are simply not built).
#pragma once
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/graph.h"
#include "harness/arch/mobilenet_space.h"

namespace xnn::nas {

enum class WeightSharing { kNone, kSe, kPointwise };
// "none", "se", "pointwise".
const char* weight_sharing_name(WeightSharing sharing);
// The sharing named `name`; false when it is not one of those.
bool parse_weight_sharing(const std::string& name, WeightSharing* out);

enum class SupernetSplit { kNone, kStemStride };
// "none", "stem_stride".
const char* supernet_split_name(SupernetSplit split);
// The split named `name`; false when it is not one of those.
bool parse_supernet_split(const std::string& name, SupernetSplit* out);

// The store key of an initialiser named `name` in the model of `arch` (see above).
std::string supernet_key(const arch::Arch& arch, const std::string& name, WeightSharing sharing = WeightSharing::kNone);

class SupernetWeights {
 public:
  // The supernet of `space` at width `width` (one of the space's width multipliers); fresh
  // tensors take the initial values of the first path that uses them (build_arch_model from
  // `seed`). `sharing` keys the block tensors, `split` divides the store into sub-supernets (see above).
  SupernetWeights(arch::SearchSpace space, double width, uint64_t seed, WeightSharing sharing = WeightSharing::kNone,
                  SupernetSplit split = SupernetSplit::kNone);

  const arch::SearchSpace& space() const { return space_; }
  double width() const { return width_; }
  WeightSharing sharing() const { return sharing_; }
  SupernetSplit split() const { return split_; }
  // The sub-supernets' stem strides (kStemStride: the space's stem strides), or {0} unsplit: one
  // supernet over every stem stride.
  std::vector<int64_t> groups() const;
  // The store key of initialiser `name` in the model of `arch`: supernet_key with the split's prefix.
  std::string key(const arch::Arch& arch, const std::string& name) const;

  // The model of `arch` (which must have the supernet's width) with its stored tensors. With
  // `share`, the model's initialisers alias the store (training updates it) and are renamed to
  // their store keys (so optimiser state keys per choice); without, they are deep copies under
  // the builder's names (an independent subnet: BatchNorm re-calibration, export). Tensors the
  // store lacks are added from the fresh build. `batch` as in build_arch_model.
  std::shared_ptr<Model> realize(const arch::Arch& arch, bool share, int64_t batch = 0);

  // The stored tensor under `key`, or nullptr.
  const Tensor* find(const std::string& key) const;
  size_t size() const { return tensors_.size(); }
  const std::map<std::string, Tensor>& tensors() const { return tensors_; }
  // Replaces the stored tensors with `tensors` (a checkpoint); shapes of keys present in both must agree.
  void load(const std::map<std::string, Tensor>& tensors);

 private:
  arch::SearchSpace space_;
  double width_;
  uint64_t seed_;
  WeightSharing sharing_;
  SupernetSplit split_;
  std::map<std::string, Tensor> tensors_;
};

// A named list of float / int64 tensors in one file (the supernet checkpoint: weights and
// optimiser state). Written to PATH.tmp and renamed, so a crash leaves the old file or none.
void save_tensor_file(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors);
// Throws naming the file when it is missing, truncated or not such a file.
std::vector<std::pair<std::string, Tensor>> load_tensor_file(const std::string& path);

}  // namespace xnn::nas
