#include "harness/train/model_builder.h"

#include <cmath>
#include <random>

#include "engine/core/error.h"
#include "harness/config/yaml_section.h"

namespace xnn::train {
namespace {

std::string where(const std::string& file, const YAML::Node& n) { return config::yaml_where(file, n); }

const std::vector<std::string> kBlockTypes = {"conv", "depthwise", "pointwise", "maxpool", "avgpool",
                                              "dropout", "gap", "flatten", "fc"};
const std::vector<std::string> kActivations = {"none", "relu", "relu6", "leakyrelu", "hardswish", "sigmoid", "silu"};

bool contains(const std::vector<std::string>& v, const std::string& s) {
  for (const auto& x : v)
    if (x == s) return true;
  return false;
}
std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

template <typename T>
T scalar(const YAML::Node& n, const std::string& key, const std::string& file, const char* expected) {
  try {
    return n.as<T>();
  } catch (const YAML::Exception&) {
    throw Error(where(file, n) + ": '" + key + "' must be " + expected);
  }
}

class Builder {
 public:
  explicit Builder(uint64_t seed) : rng_(seed), model_(std::make_shared<Model>()) {}
  Graph& g() { return model_->graph; }

  int value(const std::string& name) {
    Value v;
    v.name = name;
    v.dtype = DType::kF32;
    return g().add_value(v);
  }
  int uniform_param(const std::string& name, const Shape& shape, float bound) {
    Tensor t(DType::kF32, shape);
    std::uniform_real_distribution<float> d(-bound, bound);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng_);
    return g().add_constant(name, std::move(t));
  }
  int filled(const std::string& name, const Shape& shape, float v) {
    Tensor t(DType::kF32, shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = v;
    return g().add_constant(name, std::move(t));
  }
  int node(const std::string& op, const std::string& name, std::vector<int> inputs,
           std::map<std::string, Attribute> attrs = {}) {
    Node n;
    n.op_type = op;
    n.name = name;
    n.inputs = std::move(inputs);
    n.attrs = std::move(attrs);
    const int out = value(name + "_out");
    n.outputs = {out};
    g().nodes.push_back(std::move(n));
    return out;
  }
  int activation(const std::string& act, const std::string& name, int x) {
    if (act == "none") return x;
    if (act == "relu") return node("Relu", name + "_relu", {x});
    if (act == "relu6") {
      const int lo = g().add_constant(name + "_clip_min", Tensor::scalar<float>(0.0f));
      const int hi = g().add_constant(name + "_clip_max", Tensor::scalar<float>(6.0f));
      return node("Clip", name + "_relu6", {x, lo, hi});
    }
    if (act == "leakyrelu") return node("LeakyRelu", name + "_leakyrelu", {x}, {{"alpha", 0.01f}});
    if (act == "hardswish") return node("HardSwish", name + "_hardswish", {x});
    if (act == "sigmoid") return node("Sigmoid", name + "_sigmoid", {x});
    const int s = node("Sigmoid", name + "_silu_sigmoid", {x});  // silu = x·sigmoid(x)
    return node("Mul", name + "_silu", {x, s});
  }
  std::shared_ptr<Model> model() { return model_; }

 private:
  std::mt19937_64 rng_;
  std::shared_ptr<Model> model_;
};

}  // namespace

BuilderSpec parse_builder_spec(const YAML::Node& node, const std::string& file) {
  if (!node.IsMap()) throw Error(where(file, node) + ": 'model.builder' must be a mapping with input, classes and blocks");
  BuilderSpec spec;
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    if (key != "input" && key != "classes" && key != "blocks") {
      throw Error(where(file, kv.first) + ": unknown key 'model.builder." + key + "' (expected input, classes, blocks)");
    }
  }
  if (!node["input"] || !node["input"].IsSequence() || node["input"].size() != 3) {
    throw Error(where(file, node) + ": 'model.builder.input' must be [C, H, W], e.g. [1, 28, 28]");
  }
  for (const auto& d : node["input"]) {
    const int64_t v = scalar<int64_t>(d, "model.builder.input", file, "a list of three positive integers");
    if (v <= 0) throw Error(where(file, d) + ": 'model.builder.input' dims must be positive");
    spec.input.push_back(v);
  }
  if (node["classes"]) spec.classes = scalar<int64_t>(node["classes"], "model.builder.classes", file, "an integer >= 2");
  if (spec.classes < 2) throw Error(where(file, node["classes"]) + ": 'model.builder.classes' must be >= 2");
  if (!node["blocks"] || !node["blocks"].IsSequence()) {
    throw Error(where(file, node) + ": 'model.builder.blocks' must be a list of blocks");
  }
  for (const auto& b : node["blocks"]) {
    if (!b.IsMap() || !b["type"]) throw Error(where(file, b) + ": each block must be a mapping with a 'type'");
    BlockSpec s;
    s.location = where(file, b);
    s.type = b["type"].as<std::string>();
    if (!contains(kBlockTypes, s.type)) {
      throw Error(where(file, b["type"]) + ": unknown block type '" + s.type + "' (expected one of " + join(kBlockTypes) + ")");
    }
    if (s.type == "maxpool" || s.type == "avgpool") s.kernel = 2;
    if (s.type == "pointwise") s.kernel = 1;
    bool stride_given = false;
    for (const auto& kv : b) {
      const std::string key = kv.first.as<std::string>();
      const std::string full = "blocks[].(" + s.type + ")." + key;
      if (key == "type") continue;
      if (key == "out") s.out = scalar<int64_t>(kv.second, full, file, "a positive integer");
      else if (key == "kernel") s.kernel = scalar<int64_t>(kv.second, full, file, "a positive integer");
      else if (key == "stride") s.stride = scalar<int64_t>(kv.second, full, file, "a positive integer"), stride_given = true;
      else if (key == "bn") s.bn = scalar<bool>(kv.second, full, file, "true or false");
      else if (key == "act") s.act = scalar<std::string>(kv.second, full, file, "an activation name");
      else if (key == "p") s.p = scalar<float>(kv.second, full, file, "a ratio in [0, 1)");
      else throw Error(where(file, kv.first) + ": unknown key '" + key + "' in a " + s.type + " block (expected out, kernel, stride, bn, act, p)");
    }
    if ((s.type == "maxpool" || s.type == "avgpool") && !stride_given) s.stride = s.kernel;
    if ((s.type == "conv" || s.type == "pointwise" || s.type == "fc") && s.out <= 0) {
      throw Error(s.location + ": a " + s.type + " block needs 'out' > 0");
    }
    if (s.kernel <= 0 || s.stride <= 0) throw Error(s.location + ": kernel and stride must be positive");
    if (!contains(kActivations, s.act)) throw Error(s.location + ": unknown act '" + s.act + "' (expected one of " + join(kActivations) + ")");
    if (s.p < 0 || s.p >= 1) throw Error(s.location + ": dropout 'p' must be in [0, 1)");
    spec.blocks.push_back(s);
  }
  return spec;
}

std::shared_ptr<Model> build_model(const BuilderSpec& spec, uint64_t seed) {
  Builder b(seed);
  Graph& g = b.g();
  g.name = "builder";
  Value in;
  in.name = "input";
  in.dtype = DType::kF32;
  in.has_shape = true;
  in.shape = {Dim::named("batch"), Dim::fixed(spec.input[0]), Dim::fixed(spec.input[1]), Dim::fixed(spec.input[2])};
  int x = g.add_value(in);
  g.inputs.push_back(x);
  int64_t c = spec.input[0], h = spec.input[1], w = spec.input[2];
  bool flat = false;
  int64_t features = 0;
  int idx = 0;
  for (const BlockSpec& s : spec.blocks) {
    const std::string name = s.type + std::to_string(idx++);
    if (s.type == "conv" || s.type == "depthwise" || s.type == "pointwise") {
      if (flat) throw Error(s.location + ": a " + s.type + " block cannot follow flatten/gap/fc");
      const int64_t out = s.type == "depthwise" ? c : s.out;
      const int64_t group = s.type == "depthwise" ? c : 1;
      const int64_t cin = c / group;
      const int64_t pad = s.kernel / 2;
      const float bound = 1.0f / std::sqrt(static_cast<float>(cin * s.kernel * s.kernel));
      const int wt = b.uniform_param(name + ".weight", {out, cin, s.kernel, s.kernel}, bound);
      std::vector<int> ins = {x, wt};
      if (!s.bn) ins.push_back(b.uniform_param(name + ".bias", {out}, bound));  // BatchNorm's β replaces the bias
      x = b.node("Conv", name, ins,
                 {{"kernel_shape", std::vector<int64_t>{s.kernel, s.kernel}},
                  {"strides", std::vector<int64_t>{s.stride, s.stride}},
                  {"pads", std::vector<int64_t>{pad, pad, pad, pad}},
                  {"group", group}});
      if (s.bn) {
        x = b.node("BatchNormalization", name + "_bn",
                   {x, b.filled(name + "_bn.weight", {out}, 1.0f), b.filled(name + "_bn.bias", {out}, 0.0f),
                    b.filled(name + "_bn.running_mean", {out}, 0.0f), b.filled(name + "_bn.running_var", {out}, 1.0f)},
                   {{"epsilon", 1e-5f}, {"momentum", 0.9f}});
      }
      x = b.activation(s.act, name, x);
      c = out;
      h = (h + 2 * pad - s.kernel) / s.stride + 1;
      w = (w + 2 * pad - s.kernel) / s.stride + 1;
    } else if (s.type == "maxpool" || s.type == "avgpool") {
      if (flat) throw Error(s.location + ": a pooling block cannot follow flatten/gap/fc");
      x = b.node(s.type == "maxpool" ? "MaxPool" : "AveragePool", name, {x},
                 {{"kernel_shape", std::vector<int64_t>{s.kernel, s.kernel}},
                  {"strides", std::vector<int64_t>{s.stride, s.stride}}});
      h = (h - s.kernel) / s.stride + 1;
      w = (w - s.kernel) / s.stride + 1;
    } else if (s.type == "dropout") {
      const int ratio = g.add_constant(name + "_ratio", Tensor::scalar<float>(s.p));
      x = b.node("Dropout", name, {x, ratio});
    } else if (s.type == "gap" || s.type == "flatten") {
      if (flat) throw Error(s.location + ": the features are already flat");
      if (s.type == "gap") {
        x = b.node("GlobalAveragePool", name, {x});
        h = w = 1;
      }
      x = b.node("Flatten", name + "_flatten", {x}, {{"axis", int64_t{1}}});
      flat = true;
      features = c * h * w;
    } else {  // fc
      if (!flat) throw Error(s.location + ": an fc block needs flat features: put a gap or flatten block before it");
      const float bound = 1.0f / std::sqrt(static_cast<float>(features));
      const int wt = b.uniform_param(name + ".weight", {s.out, features}, bound);
      const int bias = b.uniform_param(name + ".bias", {s.out}, bound);
      x = b.node("Gemm", name, {x, wt, bias}, {{"transB", int64_t{1}}});
      x = b.activation(s.act, name, x);
      features = s.out;
    }
    if (h <= 0 || w <= 0) throw Error(s.location + ": the feature map shrinks to nothing here (" + std::to_string(h) + "x" + std::to_string(w) + ")");
  }
  if (!flat) {
    x = b.node("Flatten", "flatten", {x}, {{"axis", int64_t{1}}});
    features = c * h * w;
  }
  const float bound = 1.0f / std::sqrt(static_cast<float>(features));
  const int wt = b.uniform_param("classifier.weight", {spec.classes, features}, bound);
  const int bias = b.uniform_param("classifier.bias", {spec.classes}, bound);
  x = b.node("Gemm", "classifier", {x, wt, bias}, {{"transB", int64_t{1}}});
  g.value(x).name = "logits";
  g.value(x).has_shape = true;
  g.value(x).shape = {Dim::named("batch"), Dim::fixed(spec.classes)};
  g.outputs.push_back(x);
  g.validate("model builder");
  auto m = b.model();
  m->opset = 13;
  m->metadata.producer = "xnn-lab train (model builder)";
  return m;
}

}  // namespace xnn::train
