#include "harness/compress_recipe/recipe.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "engine/coding/symbol_stream.h"
#include "engine/core/error.h"
#include "harness/config/yaml_section.h"

namespace xnn::compress_recipe {
namespace {

namespace fs = std::filesystem;

// Parsing context of one stage body: the file, the "stages[i].kind" prefix of messages.
struct Ctx {
  std::string file;
  std::string what;

  [[noreturn]] void fail(const YAML::Node& at, const std::string& message) const {
    throw Error(where(file, at) + ": " + what + ": " + message);
  }

  void allow(const YAML::Node& body, const std::vector<std::string>& keys) const {
    if (!body.IsMap()) fail(body, "expected a mapping of options");
    for (const auto& kv : body) {
      const std::string key = kv.first.as<std::string>();
      bool known = false;
      for (const std::string& k : keys) known = known || k == key;
      if (!known) {
        std::string list;
        for (const std::string& k : keys) list += (list.empty() ? "" : ", ") + k;
        fail(kv.first, "unknown key '" + key + "'; expected one of: " + list);
      }
    }
  }

  template <typename T>
  T scalar(const YAML::Node& v, const std::string& key, const char* expected) const {
    try {
      if (!v.IsScalar()) throw YAML::Exception(v.Mark(), "not a scalar");
      return v.as<T>();
    } catch (const YAML::Exception&) {
      fail(v, "'" + key + "' must be " + expected);
    }
  }

  double share(const YAML::Node& v, const std::string& key, bool open_top) const {
    const double x = scalar<double>(v, key, "a number");
    const bool ok = open_top ? (x >= 0.0 && x < 1.0) : (x > 0.0 && x <= 1.0);
    if (!ok) fail(v, "'" + key + "' must be a share in " + (open_top ? "[0, 1)" : "(0, 1]") + ", got " + std::to_string(x));
    return x;
  }

  int bits(const YAML::Node& v, const std::string& key) const {
    const int b = scalar<int>(v, key, "an integer (1..8)");
    if (b < 1 || b > 8) fail(v, "'" + key + "' must be 1..8 bits, got " + std::to_string(b));
    return b;
  }

  std::string path(const YAML::Node& v, const std::string& key) const {
    std::string p = scalar<std::string>(v, key, "a file path");
    if (fs::path(p).is_relative()) p = (fs::path(file).parent_path() / p).lexically_normal().string();
    if (!fs::exists(p)) fail(v, "'" + key + "': no such file '" + p + "'");
    return p;
  }
};

// `c.what` names the mapping ("stages[2].cluster.finetune", or "stages[1].finetune").
FinetuneSpec parse_finetune(const YAML::Node& body, const Ctx& c) {
  if (!body.IsMap()) c.fail(body, "expected a mapping {config: TRAIN.yaml, KEY: VALUE overrides...}");
  if (!body["config"]) c.fail(body, "missing 'config' (a training config, configs/train)");
  FinetuneSpec s;
  s.location = where(c.file, body);
  s.config = c.path(body["config"], "config");
  for (const auto& kv : body) {
    const std::string key = kv.first.as<std::string>();
    if (key == "config") continue;
    s.overrides.push_back(key + "=" + c.scalar<std::string>(kv.second, key, "a scalar (a training-config override)"));
  }
  return s;
}


ClusterStage parse_cluster(const YAML::Node& body, const Ctx& c) {
  c.allow(body, {"bits", "bits_per_layer", "min_elements", "finetune"});
  ClusterStage s;
  if (body["bits"]) s.bits = c.bits(body["bits"], "bits");
  if (const YAML::Node m = body["bits_per_layer"]) {
    if (!m.IsMap()) c.fail(m, "'bits_per_layer' must be a mapping of weight or node name: bits");
    for (const auto& kv : m) {
      const std::string name = kv.first.as<std::string>();
      s.bits_per_layer[name] = c.bits(kv.second, "bits_per_layer." + name);
      s.bits_per_layer_location[name] = where(c.file, kv.first);
    }
  }
  if (body["min_elements"]) {
    s.min_elements = c.scalar<int64_t>(body["min_elements"], "min_elements", "an integer");
    if (s.min_elements < 1) c.fail(body["min_elements"], "'min_elements' must be >= 1");
  }
  if (body["finetune"]) s.finetune = parse_finetune(body["finetune"], Ctx{c.file, c.what + ".finetune"});
  return s;
}

QuantizeStage parse_quantize(const YAML::Node& body, const Ctx& c) {
  QuantizeStage s;
  if (!body || body.IsNull()) return s;
  c.allow(body, {"calib_samples", "per_tensor", "exclude"});
  if (body["calib_samples"]) {
    s.calib_samples = c.scalar<int64_t>(body["calib_samples"], "calib_samples", "an integer");
    if (s.calib_samples < 1) c.fail(body["calib_samples"], "'calib_samples' must be >= 1");
  }
  if (body["per_tensor"]) s.per_tensor = c.scalar<bool>(body["per_tensor"], "per_tensor", "true or false");
  if (const YAML::Node e = body["exclude"]) {
    if (!e.IsSequence()) c.fail(e, "'exclude' must be a list of node names");
    for (const auto& n : e) s.exclude.push_back(c.scalar<std::string>(n, "exclude[]", "a node name"));
  }
  return s;
}

EncodeStage parse_encode(const YAML::Node& body, const Ctx& c) {
  EncodeStage s;
  if (!body || body.IsNull()) return s;
  c.allow(body, {"coder", "bits", "bits_per_layer", "cluster", "keep_zero", "min_elements"});
  if (body["coder"]) {
    try {
      s.options.coder = coding::symbol_coder_from_name(c.scalar<std::string>(body["coder"], "coder", "fixed, huffman or rans"));
    } catch (const Error& e) {
      c.fail(body["coder"], e.what());
    }
  }
  if (body["bits"]) s.options.bits = c.bits(body["bits"], "bits");
  if (const YAML::Node m = body["bits_per_layer"]) {
    if (!m.IsMap()) c.fail(m, "'bits_per_layer' must be a mapping of weight or node name: bits");
    for (const auto& kv : m) {
      const std::string name = kv.first.as<std::string>();
      s.options.bits_per_layer[name] = c.bits(kv.second, "bits_per_layer." + name);
    }
  }
  if (body["cluster"]) {
    s.options.cluster = c.scalar<bool>(body["cluster"], "cluster", "true or false");
    s.cluster_given = true;
  }
  if (body["keep_zero"]) s.options.keep_zero = c.scalar<bool>(body["keep_zero"], "keep_zero", "true or false");
  if (body["min_elements"]) {
    s.options.min_elements = c.scalar<int64_t>(body["min_elements"], "min_elements", "an integer");
    if (s.options.min_elements < 1) c.fail(body["min_elements"], "'min_elements' must be >= 1");
    s.min_elements_given = true;
  }
  return s;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open the recipe");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

std::string where(const std::string& file, const YAML::Node& node) { return config::yaml_where(file, node); }

const std::vector<std::string>& stage_kinds() {
  static const std::vector<std::string> k = {"prune", "finetune", "cluster", "quantize", "encode"};
  return k;
}

PruneStage parse_prune_stage(const YAML::Node& body, const std::string& file, const std::string& what) {
  const Ctx c{file, what};
  c.allow(body, {"method", "target_sparsity", "target_flops", "target_params", "schedule", "scope", "per_layer",
                 "min_elements", "prune_first_conv", "prune_depthwise", "importance", "round_to", "finetune"});
  PruneStage s;
  if (body["method"]) {
    s.method = c.scalar<std::string>(body["method"], "method", "unstructured or channel");
    if (s.method != "unstructured" && s.method != "channel") {
      c.fail(body["method"], "'method' must be unstructured or channel, got '" + s.method + "'");
    }
  }
  const bool channel = s.method == "channel";
  if (body["target_sparsity"]) s.target_sparsity = c.share(body["target_sparsity"], "target_sparsity", true);
  if (body["target_flops"]) s.target_flops = c.share(body["target_flops"], "target_flops", false);
  if (body["target_params"]) s.target_params = c.share(body["target_params"], "target_params", false);
  const int targets = (s.target_sparsity ? 1 : 0) + (s.target_flops ? 1 : 0) + (s.target_params ? 1 : 0);
  if (targets > 1) c.fail(body, "give one of target_sparsity, target_flops, target_params");
  if (channel) {
    if (s.target_sparsity) c.fail(body["target_sparsity"], "method channel takes target_flops or target_params");
    if (targets == 0) c.fail(body, "method channel needs target_flops or target_params");
    for (const char* k : {"schedule", "scope", "per_layer", "prune_first_conv", "prune_depthwise", "min_elements"}) {
      if (body[k]) c.fail(body[k], std::string("'") + k + "' applies to method unstructured only");
    }
  } else {
    if (s.target_params) c.fail(body["target_params"], "'target_params' applies to method channel only");
    for (const char* k : {"importance", "round_to"}) {
      if (body[k]) c.fail(body[k], std::string("'") + k + "' applies to method channel only");
    }
  }
  if (body["schedule"]) {
    s.schedule = c.scalar<std::string>(body["schedule"], "schedule", "oneshot or gradual");
    if (s.schedule != "oneshot" && s.schedule != "gradual") {
      c.fail(body["schedule"], "'schedule' must be oneshot or gradual, got '" + s.schedule + "'");
    }
  }
  if (body["scope"]) {
    s.scope = c.scalar<std::string>(body["scope"], "scope", "layer or global");
    if (s.scope != "layer" && s.scope != "global") c.fail(body["scope"], "'scope' must be layer or global, got '" + s.scope + "'");
  }
  if (const YAML::Node m = body["per_layer"]) {
    if (!m.IsMap()) c.fail(m, "'per_layer' must be a mapping of weight or node name: sparsity");
    if (s.scope == "global") c.fail(m, "'per_layer' sparsities need scope: layer");
    for (const auto& kv : m) {
      const std::string name = kv.first.as<std::string>();
      s.per_layer[name] = c.share(kv.second, "per_layer." + name, true);
      s.per_layer_location[name] = where(file, kv.first);
    }
    if (s.target_flops) c.fail(m, "'per_layer' sparsities go with target_sparsity (the other layers' target)");
  }
  if (!channel && targets == 0 && s.per_layer.empty()) c.fail(body, "give target_sparsity, target_flops or per_layer");
  if (body["min_elements"]) {
    s.options.min_elements = c.scalar<int64_t>(body["min_elements"], "min_elements", "an integer");
    if (s.options.min_elements < 0) c.fail(body["min_elements"], "'min_elements' must be >= 0");
  }
  if (body["prune_first_conv"]) s.options.prune_first_conv = c.scalar<bool>(body["prune_first_conv"], "prune_first_conv", "true or false");
  if (body["prune_depthwise"]) s.options.prune_depthwise = c.scalar<bool>(body["prune_depthwise"], "prune_depthwise", "true or false");
  if (body["importance"]) {
    s.importance = c.scalar<std::string>(body["importance"], "importance", "l1, l2, bn or taylor");
    if (s.importance != "l1" && s.importance != "l2" && s.importance != "bn" && s.importance != "taylor") {
      c.fail(body["importance"], "'importance' must be l1, l2, bn or taylor, got '" + s.importance + "'");
    }
  }
  if (body["round_to"]) {
    s.round_to = c.scalar<int64_t>(body["round_to"], "round_to", "an integer");
    if (s.round_to < 1) c.fail(body["round_to"], "'round_to' must be >= 1");
  }
  if (body["finetune"]) s.finetune = parse_finetune(body["finetune"], Ctx{c.file, c.what + ".finetune"});
  if (s.schedule == "gradual" && !s.finetune) {
    c.fail(body["schedule"], "schedule gradual prunes during fine-tuning: add finetune: {config: TRAIN.yaml}");
  }
  return s;
}

Recipe parse_recipe(const YAML::Node& root, const std::string& file) {
  if (!root || !root.IsMap()) throw Error(where(file, root) + ": a recipe is a mapping with 'stages' (and optional 'name')");
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    if (key != "name" && key != "stages") {
      throw Error(where(file, kv.first) + ": unknown key '" + key + "'; expected name, stages");
    }
  }
  Recipe r;
  r.path = file;
  r.name = fs::path(file).stem().string();
  if (root["name"]) {
    const Ctx c{file, "recipe"};
    r.name = c.scalar<std::string>(root["name"], "name", "a string");
  }
  const YAML::Node stages = root["stages"];
  if (!stages) throw Error(where(file, root) + ": missing 'stages' (a list of prune / finetune / cluster / quantize / encode)");
  if (!stages.IsSequence() || stages.size() == 0) {
    throw Error(where(file, stages) + ": 'stages' must be a non-empty list");
  }
  bool encoded = false;
  for (size_t i = 0; i < stages.size(); ++i) {
    const YAML::Node st = stages[i];
    const std::string at = "stages[" + std::to_string(i) + "]";
    if (!st.IsMap() || st.size() != 1) {
      throw Error(where(file, st) + ": " + at + ": a stage is a mapping with one key: prune, finetune, cluster, quantize or encode");
    }
    const std::string kind = st.begin()->first.as<std::string>();
    const YAML::Node body = st.begin()->second;
    const Ctx c{file, at + "." + kind};
    RecipeStage rs;
    rs.kind = kind;
    rs.location = where(file, st);
    if (encoded) c.fail(st.begin()->first, "the encode stage must be the last one (its coded storage is the output)");
    if (kind == "prune") {
      rs.spec = parse_prune_stage(body, file, c.what);
    } else if (kind == "finetune") {
      rs.spec = FinetuneStage{parse_finetune(body, c)};
    } else if (kind == "cluster") {
      rs.spec = parse_cluster(body, c);
    } else if (kind == "quantize") {
      rs.spec = parse_quantize(body, c);
    } else if (kind == "encode") {
      rs.spec = parse_encode(body, c);
      encoded = true;
    } else {
      c.fail(st.begin()->first, "unknown stage '" + kind + "'; expected prune, finetune, cluster, quantize or encode");
    }
    r.stages.push_back(std::move(rs));
  }
  return r;
}

Recipe load_recipe(const std::string& path) {
  if (!fs::exists(path)) throw Error(path + ": no such recipe file");
  const std::string text = read_file(path);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw Error(path + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                ": invalid YAML: " + e.msg);
  }
  Recipe r = parse_recipe(root, path);
  r.text = text;
  return r;
}

}  // namespace xnn::compress_recipe
