#include "nas/oneshot/supernet_weights.h"

#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "engine/core/error.h"

namespace fs = std::filesystem;

namespace xnn::nas {
namespace {

bool stored_kind(const Value& v) { return v.is_constant() && v.data->dtype() == DType::kF32 && v.data->rank() >= 1; }

// "stage<s>.block<b>." -> (s, b, length of the prefix); false for other names.
bool parse_block_prefix(const std::string& name, size_t* s, size_t* b, size_t* len) {
  if (name.rfind("stage", 0) != 0) return false;
  size_t i = 5, j = i;
  while (j < name.size() && std::isdigit(static_cast<unsigned char>(name[j]))) ++j;
  if (j == i || name.compare(j, 6, ".block") != 0) return false;
  *s = std::stoul(name.substr(i, j - i));
  i = j + 6;
  j = i;
  while (j < name.size() && std::isdigit(static_cast<unsigned char>(name[j]))) ++j;
  if (j == i || j >= name.size() || name[j] != '.') return false;
  *b = std::stoul(name.substr(i, j - i));
  *len = j + 1;
  return true;
}

}  // namespace

const char* weight_sharing_name(WeightSharing sharing) {
  switch (sharing) {
    case WeightSharing::kNone: return "none";
    case WeightSharing::kSe: return "se";
    case WeightSharing::kPointwise: return "pointwise";
  }
  return "?";
}

bool parse_weight_sharing(const std::string& name, WeightSharing* out) {
  for (WeightSharing s : {WeightSharing::kNone, WeightSharing::kSe, WeightSharing::kPointwise}) {
    if (name == weight_sharing_name(s)) {
      *out = s;
      return true;
    }
  }
  return false;
}

const char* supernet_split_name(SupernetSplit split) {
  return split == SupernetSplit::kStemStride ? "stem_stride" : "none";
}

bool parse_supernet_split(const std::string& name, SupernetSplit* out) {
  for (SupernetSplit s : {SupernetSplit::kNone, SupernetSplit::kStemStride}) {
    if (name == supernet_split_name(s)) {
      *out = s;
      return true;
    }
  }
  return false;
}

std::string supernet_key(const arch::Arch& arch, const std::string& name, WeightSharing sharing) {
  size_t s = 0, b = 0, len = 0;
  if (!parse_block_prefix(name, &s, &b, &len)) return name;
  if (s >= arch.stages.size() || b >= arch.stages[s].size()) {
    throw Error("supernet: initialiser '" + name + "' names a block that architecture '" + arch.to_string() + "' lacks");
  }
  const arch::BlockChoice& c = arch.stages[s][b];
  const std::string rest = name.substr(len);
  std::string choice = "k" + std::to_string(c.kernel) + "e" + std::to_string(c.expansion);
  if (sharing == WeightSharing::kNone && c.se) choice += "se";
  // build_arch_model names the depthwise stage "depthwise.*"; everything else in a block is a
  // 1x1 convolution (expansion, SE, projection) or its BatchNorm.
  if (sharing == WeightSharing::kPointwise && rest.rfind("depthwise.", 0) != 0) choice = "e" + std::to_string(c.expansion);
  return name.substr(0, len - 1) + "/" + choice + "/" + rest;
}

SupernetWeights::SupernetWeights(arch::SearchSpace space, double width, uint64_t seed, WeightSharing sharing,
                                 SupernetSplit split)
    : space_(std::move(space)), width_(width), seed_(seed), sharing_(sharing), split_(split) {
  bool found = false;
  for (double w : space_.width_multipliers) found = found || w == width;
  if (!found) throw Error("supernet: width " + std::to_string(width) + " is not one of the space's width multipliers");
}

std::vector<int64_t> SupernetWeights::groups() const {
  if (split_ == SupernetSplit::kStemStride) return space_.stem_strides;
  return {0};
}

std::string SupernetWeights::key(const arch::Arch& arch, const std::string& name) const {
  if (split_ == SupernetSplit::kNone) return supernet_key(arch, name, sharing_);
  std::string k = "s";
  k += std::to_string(arch::stem_stride(space_, arch));
  k += '/';
  k += supernet_key(arch, name, sharing_);
  return k;
}

std::shared_ptr<Model> SupernetWeights::realize(const arch::Arch& arch, bool share, int64_t batch) {
  if (arch.width != width_) {
    throw Error("supernet: architecture '" + arch.to_string() + "' has width " + std::to_string(arch.width) +
                ", the supernet's is " + std::to_string(width_));
  }
  std::shared_ptr<Model> model = arch::build_arch_model(space_, arch, seed_, batch);
  for (Value& v : model->graph.values) {
    if (!stored_kind(v)) continue;
    const std::string key = this->key(arch, v.name);
    auto it = tensors_.find(key);
    if (it == tensors_.end()) {
      it = tensors_.emplace(key, *v.data).first;
    } else if (it->second.shape() != v.data->shape()) {
      throw Error("supernet: stored tensor '" + key + "' has shape " + shape_str(it->second.shape()) + ", path '" +
                  arch.to_string() + "' needs " + shape_str(v.data->shape()));
    }
    if (share) {
      v.data = it->second;
      v.name = key;
    } else {
      v.data = it->second.clone();
    }
  }
  return model;
}

const Tensor* SupernetWeights::find(const std::string& key) const {
  const auto it = tensors_.find(key);
  return it == tensors_.end() ? nullptr : &it->second;
}

void SupernetWeights::load(const std::map<std::string, Tensor>& tensors) {
  for (const auto& [key, t] : tensors) {
    const auto it = tensors_.find(key);
    if (it != tensors_.end() && it->second.shape() != t.shape()) {
      throw Error("supernet: checkpoint tensor '" + key + "' has shape " + shape_str(t.shape()) + ", expected " +
                  shape_str(it->second.shape()));
    }
  }
  tensors_.clear();
  for (const auto& [key, t] : tensors) tensors_.emplace(key, t.clone());
}

// ---- tensor files ------------------------------------------------------------------------------

namespace {
constexpr char kMagic[8] = {'X', 'N', 'N', 'T', 'E', 'N', 'S', '1'};

template <typename T>
void put(std::ostream& o, T v) {
  o.write(reinterpret_cast<const char*>(&v), sizeof v);
}
template <typename T>
T get(std::istream& in, const std::string& path) {
  T v{};
  if (!in.read(reinterpret_cast<char*>(&v), sizeof v)) throw Error(path + ": truncated tensor file");
  return v;
}
}  // namespace

void save_tensor_file(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors) {
  if (fs::path(path).has_parent_path()) fs::create_directories(fs::path(path).parent_path());
  const std::string tmp = path + ".tmp";
  {
    std::ofstream o(tmp, std::ios::binary | std::ios::trunc);
    if (!o) throw Error(tmp + ": cannot write");
    o.write(kMagic, sizeof kMagic);
    put<uint64_t>(o, tensors.size());
    for (const auto& [name, t] : tensors) {
      if (t.dtype() != DType::kF32 && t.dtype() != DType::kI64) {
        throw Error(path + ": tensor '" + name + "' is " + std::string(dtype_name(t.dtype())) + " (only f32 and i64 are stored)");
      }
      put<uint32_t>(o, static_cast<uint32_t>(name.size()));
      o.write(name.data(), static_cast<std::streamsize>(name.size()));
      put<uint8_t>(o, t.dtype() == DType::kF32 ? 0 : 1);
      put<uint32_t>(o, static_cast<uint32_t>(t.rank()));
      for (int64_t d : t.shape()) put<int64_t>(o, d);
      o.write(static_cast<const char*>(t.raw()), static_cast<std::streamsize>(t.nbytes()));
    }
    if (!o) throw Error(tmp + ": write failed");
  }
  fs::rename(tmp, path);
}

std::vector<std::pair<std::string, Tensor>> load_tensor_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open the tensor file");
  char magic[8];
  if (!in.read(magic, sizeof magic) || std::memcmp(magic, kMagic, sizeof magic) != 0) {
    throw Error(path + ": not an xnn-lab tensor file (bad magic)");
  }
  const uint64_t count = get<uint64_t>(in, path);
  std::vector<std::pair<std::string, Tensor>> out;
  for (uint64_t i = 0; i < count; ++i) {
    const uint32_t len = get<uint32_t>(in, path);
    if (len > 4096) throw Error(path + ": corrupt tensor file (name length " + std::to_string(len) + ")");
    std::string name(len, '\0');
    if (!in.read(name.data(), len)) throw Error(path + ": truncated tensor file");
    const uint8_t kind = get<uint8_t>(in, path);
    if (kind > 1) throw Error(path + ": corrupt tensor file (dtype code " + std::to_string(kind) + ")");
    const uint32_t rank = get<uint32_t>(in, path);
    if (rank > 8) throw Error(path + ": corrupt tensor file (rank " + std::to_string(rank) + ")");
    Shape shape;
    for (uint32_t r = 0; r < rank; ++r) {
      const int64_t d = get<int64_t>(in, path);
      if (d < 0) throw Error(path + ": corrupt tensor file (negative dim)");
      shape.push_back(d);
    }
    Tensor t(kind == 0 ? DType::kF32 : DType::kI64, shape);
    if (!in.read(static_cast<char*>(t.raw()), static_cast<std::streamsize>(t.nbytes()))) {
      throw Error(path + ": truncated tensor file (tensor '" + name + "')");
    }
    out.emplace_back(std::move(name), std::move(t));
  }
  return out;
}

}  // namespace xnn::nas
