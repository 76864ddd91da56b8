// Experiment config: YAML -> overrides -> strict validation -> ExperimentConfig.
#include "harness/config/experiment_config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "engine/core/error.h"
#include "engine/core/sha256.h"

namespace xnn::config {
namespace fs = std::filesystem;
namespace {

using KeyPath = std::vector<std::string>;

std::string join(const KeyPath& p) {
  std::string s;
  for (const std::string& seg : p) s += (s.empty() ? "" : ".") + seg;
  return s;
}

// "a", "a or b", "a, b or c"
std::string or_list(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i == 0 ? "" : i + 1 == v.size() ? " or " : ", ") + v[i];
  return s;
}

std::string comma_list(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i == 0 ? "" : ", ") + v[i];
  return s;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// How a value that is not what was expected reads in a message.
std::string describe(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "an empty value";
  if (n.IsSequence()) return n.size() == 0 ? "an empty list" : "a list";
  if (n.IsMap()) return n.size() == 0 ? "an empty map" : "a map";
  return "'" + n.Scalar() + "'";
}

std::string suggestion(const std::string& word, const std::vector<std::string>& candidates) {
  const std::string best = did_you_mean(word, candidates);
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

std::string shortest(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}
std::string shortest(float v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// A value in the tree with its key path and where it was written. For an empty value
// (`key:` with nothing after it) the mark is the key's: yaml-cpp places it at the next token.
// (yaml-cpp's Node::operator= overwrites the node a handle refers to, so assigning an At
// rebinds its handle instead.)
struct At {
  KeyPath path;
  YAML::Node node;
  YAML::Mark mark = YAML::Mark::null_mark();

  At() = default;
  At(KeyPath p, const YAML::Node& n, YAML::Mark m) : path(std::move(p)), node(n), mark(m) {}
  At(const At&) = default;
  At& operator=(const At& o) {
    path = o.path;
    node.reset(o.node);
    mark = o.mark;
    return *this;
  }
};

At child(const At& parent, const std::string& key, const YAML::Node& key_node, const YAML::Node& value) {
  KeyPath p = parent.path;
  p.push_back(key);
  return At{p, value, value.IsNull() ? key_node.Mark() : value.Mark()};
}

At item(const At& list, size_t i) {
  KeyPath p = list.path;
  p.push_back(std::to_string(i));
  const YAML::Node n = list.node[i];
  return At{p, n, n.IsNull() ? list.mark : n.Mark()};
}

class Checker {
 public:
  Checker(std::string file, fs::path dir, std::vector<Override> overrides, const ParseOptions& options)
      : file_(std::move(file)), dir_(std::move(dir)), overrides_(std::move(overrides)), opts_(options) {}

  ExperimentConfig check(const YAML::Node& root, const std::string& abs_file);

 private:
  // "override 'K=V'" when the value (or a map or list above it) was set by an override (the
  // last one wins, as when applying them), else "FILE:LINE:COL", or "FILE" for defaults.
  std::string where(const At& at) const {
    for (auto it = overrides_.rbegin(); it != overrides_.rend(); ++it) {
      if (it->path.size() <= at.path.size() && std::equal(it->path.begin(), it->path.end(), at.path.begin())) {
        return "override '" + it->text + "'";
      }
    }
    if (at.mark.is_null()) return file_;
    return file_ + ":" + std::to_string(at.mark.line + 1) + ":" + std::to_string(at.mark.column + 1);
  }

  [[noreturn]] void fail(const At& at, const std::string& msg) const {
    const std::string p = join(at.path);
    throw Error(where(at) + ": " + (p.empty() ? "" : p + ": ") + msg);
  }

  [[noreturn]] void missing(const At& map, const std::string& key, const std::string& what) const {
    if (map.path.empty()) throw Error(file_ + ": missing required key '" + key + "' (" + what + ")");
    fail(map, "missing required key '" + key + "' (" + what + ")");
  }

  std::string section_name(const KeyPath& p) const { return p.empty() ? "at the top level" : "in " + join(p); }

  // The entries of a map whose keys must all be in `allowed` (unless `allowed` is null).
  std::map<std::string, At> entries(const At& at, const std::vector<std::string>* allowed,
                                    const std::string& expected) const {
    if (!at.node.IsMap()) fail(at, "expected " + expected + ", got " + describe(at.node));
    std::map<std::string, At> out;
    for (auto it = at.node.begin(); it != at.node.end(); ++it) {
      const YAML::Node k = it->first;  // a copy: `it->` returns a temporary proxy
      if (!k.IsScalar()) fail(At{at.path, k, k.Mark()}, "expected a key name, got " + describe(k));
      const std::string key = k.Scalar();
      KeyPath kp = at.path;
      kp.push_back(key);
      const At key_at{kp, k, k.Mark()};
      if (allowed && std::find(allowed->begin(), allowed->end(), key) == allowed->end()) {
        throw Error(where(key_at) + ": unknown key '" + key + "' " + section_name(at.path) + suggestion(key, *allowed) +
                    "; expected one of: " + comma_list(*allowed));
      }
      if (out.count(key)) throw Error(where(key_at) + ": duplicate key '" + key + "' " + section_name(at.path));
      out.emplace(key, child(at, key, k, it->second));
    }
    return out;
  }

  std::string str(const At& at, const std::string& expected = "a string") const {
    if (!at.node.IsScalar()) fail(at, "expected " + expected + ", got " + describe(at.node));
    return at.node.Scalar();
  }

  std::string nonempty(const At& at, const std::string& expected = "a non-empty string") const {
    const std::string s = str(at, expected);
    if (s.empty()) fail(at, "expected " + expected + ", got ''");
    return s;
  }

  int64_t integer(const At& at, int64_t min, int64_t max = INT_MAX) const {
    const std::string kind = min == 1   ? "a positive integer"
                             : min == 0 ? "a non-negative integer"
                                        : "an integer >= " + std::to_string(min);
    if (!at.node.IsScalar()) fail(at, "expected " + kind + ", got " + describe(at.node));
    const std::string& s = at.node.Scalar();
    const char* b = s.data() + (s.size() > 1 && s[0] == '+' ? 1 : 0);
    int64_t v = 0;
    const auto r = std::from_chars(b, s.data() + s.size(), v);
    if (r.ec == std::errc::result_out_of_range && r.ptr == s.data() + s.size()) {
      fail(at, "expected an integer " + (s[0] == '-' ? ">= " + std::to_string(min) : "<= " + std::to_string(max)) +
                   ", got " + s);
    }
    if (r.ec != std::errc() || r.ptr != s.data() + s.size()) fail(at, "expected " + kind + ", got '" + s + "'");
    if (v < min) fail(at, "expected an integer >= " + std::to_string(min) + ", got " + s);
    if (v > max) fail(at, "expected an integer <= " + std::to_string(max) + ", got " + s);
    return v;
  }

  // A finite number; with `fraction`, also "A/B" (e.g. 1/255).
  double number(const At& at, const std::string& expected, double min, bool min_exclusive,
                bool fraction = false) const {
    if (!at.node.IsScalar()) fail(at, "expected " + expected + ", got " + describe(at.node));
    const std::string& s = at.node.Scalar();
    auto parse = [](const std::string& t, double& out) {
      const char* b = t.data() + (t.size() > 1 && t[0] == '+' ? 1 : 0);
      const auto r = std::from_chars(b, t.data() + t.size(), out);
      return r.ec == std::errc() && r.ptr == t.data() + t.size() && std::isfinite(out);
    };
    double v = 0;
    bool ok = parse(s, v);
    if (!ok && fraction) {
      const size_t slash = s.find('/');
      double num = 0, den = 0;
      if (slash != std::string::npos && parse(s.substr(0, slash), num) && parse(s.substr(slash + 1), den) && den != 0) {
        v = num / den;
        ok = std::isfinite(v);
      }
    }
    if (!ok) fail(at, "expected " + expected + ", got '" + s + "'");
    if (v < min || (min_exclusive && v == min)) fail(at, "expected " + expected + ", got " + s);
    return v;
  }

  bool boolean(const At& at, const std::string& expected = "true or false") const {
    if (at.node.IsScalar()) {
      const std::string s = lower(at.node.Scalar());
      if (s == "true" || s == "yes" || s == "on") return true;
      if (s == "false" || s == "no" || s == "off") return false;
    }
    fail(at, "expected " + expected + ", got " + describe(at.node));
  }

  std::string one_of(const At& at, const std::vector<std::string>& values) const {
    const std::string s = str(at, or_list(values));
    if (std::find(values.begin(), values.end(), s) == values.end()) {
      fail(at, "expected " + or_list(values) + ", got '" + s + "'" + suggestion(s, values));
    }
    return s;
  }

  std::string resolve(const std::string& p) const {
    fs::path q(p);
    if (q.is_relative()) q = dir_ / q;
    return q.lexically_normal().string();
  }

  At list(const At& at, const std::string& of_what) const {
    if (!at.node.IsSequence()) fail(at, "expected a list of " + of_what + ", got " + describe(at.node));
    if (at.node.size() == 0) fail(at, "expected at least one " + of_what.substr(0, of_what.size() - 1) + ", got an empty list");
    return at;
  }

  // A metric section: `true`/`false`, or a map of its settings (writing the map turns the metric
  // on unless it says `enabled: false`). Returns the map's entries; `enabled` is set.
  std::map<std::string, At> metric(const At& at, const std::string& what, std::vector<std::string> keys,
                                   bool& enabled) const {
    const std::string expected = "true, false or a map of " + what + " settings";
    if (at.node.IsScalar()) {
      enabled = boolean(at, expected);
      return {};
    }
    if (!at.node.IsMap()) fail(at, "expected " + expected + ", got " + describe(at.node));
    keys.push_back("enabled");
    auto e = entries(at, &keys, expected);
    enabled = e.count("enabled") ? boolean(e.at("enabled")) : true;
    return e;
  }

  Preprocess preprocess(const At& at) const;
  std::vector<float> channels(const At& at, bool positive) const;
  ModelSpec model(const At& at) const;
  VariantSpec variant(const At& at, At& name_at) const;
  StepSpec step(const At& at) const;
  TargetSpec target(const At& at, At& name_at) const;
  Metrics metrics(const At& at) const;

  std::string file_;  // as given, for messages
  fs::path dir_;      // the config's folder, absolute
  std::vector<Override> overrides_;
  const ParseOptions& opts_;
};

std::vector<float> Checker::channels(const At& at, bool positive) const {
  std::vector<At> items;
  if (at.node.IsScalar()) {
    items.push_back(at);
  } else if (at.node.IsSequence()) {
    for (size_t i = 0; i < at.node.size(); ++i) items.push_back(item(at, i));
  } else {
    fail(at, "expected a number or a list of 1 or 3 numbers, got " + describe(at.node));
  }
  if (items.size() != 1 && items.size() != 3) {
    fail(at, "expected 1 or 3 numbers (one for all channels, or one per channel), got " + std::to_string(items.size()));
  }
  std::vector<float> out;
  for (const At& it : items) {
    out.push_back(static_cast<float>(positive ? number(it, "a number > 0", 0, true) : number(it, "a number", -HUGE_VAL, false)));
  }
  return out;
}

Preprocess Checker::preprocess(const At& at) const {
  static const std::vector<std::string> keys{"scale", "mean", "std", "layout"};
  auto e = entries(at, &keys, "a map with scale:, mean:, std: and layout:");
  Preprocess p;
  if (e.count("scale")) p.scale = number(e.at("scale"), "a number > 0 (e.g. 0.00392 or 1/255)", 0, true, true);
  if (e.count("mean")) p.mean = channels(e.at("mean"), false);
  if (e.count("std")) p.std = channels(e.at("std"), true);
  if (e.count("layout")) p.layout = one_of(e.at("layout"), {"NCHW", "NHWC"});
  return p;
}

ModelSpec Checker::model(const At& at) const {
  static const std::vector<std::string> keys{"name", "path", "preprocess"};
  ModelSpec m;
  m.location = where(at);
  At path_at;
  if (at.node.IsScalar()) {
    path_at = at;
  } else if (at.node.IsMap()) {
    auto e = entries(at, &keys, "a map");
    if (!e.count("path")) missing(at, "path", "the model file, .onnx or .xnn");
    path_at = e.at("path");
    if (e.count("name")) m.name = nonempty(e.at("name"));
    if (e.count("preprocess")) m.preprocess = preprocess(e.at("preprocess"));
  } else {
    fail(at, "expected a model file or a map with path:, got " + describe(at.node));
  }
  m.path = resolve(nonempty(path_at, "a model file path"));
  if (opts_.check_paths_exist) {
    std::error_code ec;
    const fs::file_status st = fs::status(m.path, ec);
    if (!fs::exists(st)) fail(path_at, "no such file: " + m.path + " (relative paths start from the config file's folder)");
    if (fs::is_directory(st)) fail(path_at, m.path + " is a folder; expected a model file (.onnx or .xnn)");
  }
  if (m.name.empty()) m.name = fs::path(m.path).stem().string();
  return m;
}

StepSpec Checker::step(const At& at) const {
  StepSpec s;
  s.location = where(at);
  s.params = YAML::Node(YAML::NodeType::Map);
  At type_at;
  if (at.node.IsScalar()) {
    type_at = at;
  } else if (at.node.IsMap()) {
    auto e = entries(at, nullptr, "a map");
    if (!e.count("type")) missing(at, "type", "the step, e.g. convert or optimize");
    type_at = e.at("type");
    for (const auto& [key, value] : e) {
      if (key == "type") continue;
      s.params[key] = value.node;
      s.param_locations[key] = where(value);
    }
  } else {
    fail(at, "expected a step name or a map with type:, got " + describe(at.node));
  }
  s.type = nonempty(type_at, "a step name");
  if (opts_.is_known_step && !opts_.is_known_step(s.type)) {
    fail(type_at, "unknown step '" + s.type + "'" + suggestion(s.type, opts_.known_steps) +
                      "; known steps: " + comma_list(opts_.known_steps));
  }
  return s;
}

VariantSpec Checker::variant(const At& at, At& name_at) const {
  static const std::vector<std::string> keys{"name", "steps"};
  VariantSpec v;
  v.location = where(at);
  if (at.node.IsScalar()) {
    name_at = at;
  } else if (at.node.IsMap()) {
    auto e = entries(at, &keys, "a map");
    if (!e.count("name")) missing(at, "name", "the variant's name");
    name_at = e.at("name");
    if (e.count("steps")) {
      const At& steps = e.at("steps");
      if (!steps.node.IsSequence()) fail(steps, "expected a list of steps, got " + describe(steps.node));
      for (size_t i = 0; i < steps.node.size(); ++i) v.steps.push_back(step(item(steps, i)));
    }
  } else {
    fail(at, "expected a variant name or a map with name: and steps:, got " + describe(at.node));
  }
  v.name = nonempty(name_at);
  return v;
}

TargetSpec Checker::target(const At& at, At& name_at) const {
  static const std::vector<std::string> keys{"name", "kind", "threads", "affinity"};
  TargetSpec t;
  t.location = where(at);
  At kind_at;
  std::map<std::string, At> e;
  if (at.node.IsScalar()) {
    kind_at = at;
  } else if (at.node.IsMap()) {
    e = entries(at, &keys, "a map");
    if (!e.count("kind")) missing(at, "kind", "cpu, or sim:<profile> for a simulated device");
    kind_at = e.at("kind");
  } else {
    fail(at, "expected a target kind or a map with kind:, got " + describe(at.node));
  }
  t.kind = nonempty(kind_at, "a target kind");
  if (opts_.is_known_target && !opts_.is_known_target(t.kind)) {
    fail(kind_at, "unknown target '" + t.kind + "'" + suggestion(t.kind, opts_.known_targets) +
                      "; known targets: " + comma_list(opts_.known_targets));
  }
  name_at = kind_at;
  if (e.count("name")) {
    name_at = e.at("name");
    t.name = nonempty(name_at);
  } else {
    t.name = t.kind;
  }
  if (e.count("threads")) t.threads = static_cast<int>(integer(e.at("threads"), 1));
  if (e.count("affinity")) {
    const At& a = e.at("affinity");
    std::vector<At> cpus;
    if (a.node.IsScalar()) {
      cpus.push_back(a);
    } else if (a.node.IsSequence()) {
      for (size_t i = 0; i < a.node.size(); ++i) cpus.push_back(item(a, i));
    } else {
      fail(a, "expected a list of CPU ids, got " + describe(a.node));
    }
    for (const At& c : cpus) {
      const int cpu = static_cast<int>(integer(c, 0));
      if (std::find(t.affinity.begin(), t.affinity.end(), cpu) != t.affinity.end()) {
        fail(c, "CPU " + std::to_string(cpu) + " is listed twice");
      }
      t.affinity.push_back(cpu);
    }
  }
  return t;
}

Metrics Checker::metrics(const At& at) const {
  static const std::vector<std::string> keys{"latency", "size", "accuracy", "memory"};
  auto e = entries(at, &keys, "a map with latency:, size:, accuracy: or memory:");
  Metrics m;
  if (e.count("latency")) {
    LatencyMetric& l = m.latency;
    auto s = metric(e.at("latency"), "latency", {"warmup", "runs", "min_time", "max_runs", "profile"}, l.enabled);
    if (s.count("warmup")) l.warmup = static_cast<int>(integer(s.at("warmup"), 0));
    if (s.count("runs")) l.runs = static_cast<int>(integer(s.at("runs"), 1));
    if (s.count("min_time")) l.min_time = number(s.at("min_time"), "a number of seconds >= 0", 0, false);
    if (s.count("max_runs")) l.max_runs = static_cast<int>(integer(s.at("max_runs"), 1));
    if (s.count("profile")) l.profile = boolean(s.at("profile"));
    if (l.max_runs < l.runs) {
      if (s.count("max_runs")) {
        fail(s.at("max_runs"), "expected an integer >= runs (" + std::to_string(l.runs) + "), got " +
                                   std::to_string(l.max_runs));
      }
      fail(s.at("runs"), "expected an integer <= max_runs (" + std::to_string(l.max_runs) + "), got " +
                             std::to_string(l.runs));
    }
  }
  if (e.count("size")) metric(e.at("size"), "size", {}, m.size.enabled);
  if (e.count("memory")) metric(e.at("memory"), "memory", {}, m.memory.enabled);
  if (e.count("accuracy")) {
    AccuracyMetric& a = m.accuracy;
    auto s = metric(e.at("accuracy"), "accuracy", {"dataset", "split", "limit", "path"}, a.enabled);
    if (s.count("dataset")) a.dataset = one_of(s.at("dataset"), {"fashion-mnist"});
    if (s.count("split")) a.split = one_of(s.at("split"), {"test", "train"});
    if (s.count("limit")) a.limit = integer(s.at("limit"), 0, INT64_MAX);
    if (s.count("path")) {
      a.path = resolve(nonempty(s.at("path"), "a dataset folder"));
      std::error_code ec;
      if (a.enabled && opts_.check_paths_exist && !fs::is_directory(a.path, ec)) {
        fail(s.at("path"), "no such folder: " + a.path + " (relative paths start from the config file's folder)");
      }
    }
  }
  return m;
}

ExperimentConfig Checker::check(const YAML::Node& root, const std::string& abs_file) {
  static const std::vector<std::string> keys{"name", "description", "models", "variants", "targets", "metrics", "store"};
  if (!root.IsDefined() || root.IsNull()) {
    throw Error(file_ + ": the file is empty; expected a map with at least name: and models:");
  }
  const At top{{}, root, root.Mark()};
  if (!root.IsMap()) fail(top, "expected a map at the top level (name:, models:, ...), got " + describe(root));
  auto e = entries(top, &keys, "a map");
  ExperimentConfig c;
  c.file = abs_file;

  if (!e.count("name")) missing(top, "name", "a name for the experiment");
  c.name = nonempty(e.at("name"));
  if (e.count("description")) c.description = str(e.at("description"));

  if (!e.count("models")) missing(top, "models", "a list of models");
  const At& models = list(e.at("models"), "models");
  for (size_t i = 0; i < models.node.size(); ++i) {
    const At m = item(models, i);
    c.models.push_back(model(m));
    for (size_t j = 0; j < i; ++j) {
      if (c.models[j].name == c.models[i].name) {
        fail(m, "duplicate model name '" + c.models[i].name + "' (models." + std::to_string(j) +
                    " has the same name; give one a name:)");
      }
    }
  }

  if (e.count("variants")) {
    const At& variants = list(e.at("variants"), "variants");
    for (size_t i = 0; i < variants.node.size(); ++i) {
      At name_at;
      c.variants.push_back(variant(item(variants, i), name_at));
      for (size_t j = 0; j < i; ++j) {
        if (c.variants[j].name == c.variants[i].name) {
          fail(name_at, "duplicate variant name '" + c.variants[i].name + "' (variants." + std::to_string(j) +
                            " has the same name)");
        }
      }
    }
  } else {
    c.variants.push_back(VariantSpec{"fp32", {}, file_});
  }

  if (e.count("targets")) {
    const At& targets = list(e.at("targets"), "targets");
    for (size_t i = 0; i < targets.node.size(); ++i) {
      At name_at;
      c.targets.push_back(target(item(targets, i), name_at));
      for (size_t j = 0; j < i; ++j) {
        if (c.targets[j].name == c.targets[i].name) {
          fail(name_at, "duplicate target name '" + c.targets[i].name + "' (targets." + std::to_string(j) +
                            " has the same name; give one a name:)");
        }
      }
    }
  } else {
    TargetSpec t;
    t.name = t.kind = "cpu";
    t.location = file_;
    c.targets.push_back(t);
  }

  if (e.count("metrics")) c.metrics = metrics(e.at("metrics"));
  c.store = e.count("store") ? resolve(nonempty(e.at("store"), "a file path for the SQLite database"))
                             : (dir_ / "xnn-lab.db").lexically_normal().string();
  return c;
}

// Step parameters in canonical form: map keys sorted, at every level.
void emit_sorted(YAML::Emitter& out, const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) {
    out << YAML::Null;
  } else if (n.IsScalar()) {
    out << n.Scalar();
  } else if (n.IsSequence()) {
    out << YAML::BeginSeq;
    for (const YAML::Node& e : n) emit_sorted(out, e);
    out << YAML::EndSeq;
  } else {
    // Sorted by index: sorting Nodes themselves would assign them, which rewrites the tree.
    std::vector<YAML::Node> values;
    std::vector<std::pair<std::string, size_t>> keys;
    for (auto it = n.begin(); it != n.end(); ++it) {
      YAML::Emitter k;
      emit_sorted(k, it->first);
      keys.emplace_back(it->first.IsScalar() ? it->first.Scalar() : std::string(k.c_str()), values.size());
      values.push_back(it->second);
    }
    std::sort(keys.begin(), keys.end());
    out << YAML::BeginMap;
    for (const auto& [k, i] : keys) {
      out << YAML::Key << k << YAML::Value;
      emit_sorted(out, values[i]);
    }
    out << YAML::EndMap;
  }
}

void emit_floats(YAML::Emitter& out, const std::vector<float>& v) {
  out << YAML::Flow << YAML::BeginSeq;
  for (float f : v) out << shortest(f);
  out << YAML::EndSeq;
}

bool is_index(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// When an override reaches into a shorthand list entry (`- model.onnx`, `- cpu`, `- fp32`,
// `- convert`), the entry becomes its map form first, so `models.0.path=...` works on
// `models: [model.onnx]`.
void expand_shorthand(YAML::Node& root, const Override& ov) {
  struct Form {
    std::vector<std::string> pattern;  // "#": any index
    const char* key;
  };
  static const Form forms[] = {{{"models", "#"}, "path"},
                               {{"targets", "#"}, "kind"},
                               {{"variants", "#"}, "name"},
                               {{"variants", "#", "steps", "#"}, "type"}};
  for (const Form& f : forms) {
    if (ov.path.size() <= f.pattern.size()) continue;
    YAML::Node cur;
    cur.reset(root);
    bool found = true;
    for (size_t j = 0; j < f.pattern.size() && found; ++j) {
      const YAML::Node& c = cur;
      if (f.pattern[j] == "#") {
        found = is_index(ov.path[j]) && c.IsSequence() && std::stoul(ov.path[j]) < c.size();
        if (found) {
          YAML::Node next = c[std::stoul(ov.path[j])];
          cur.reset(next);
        }
      } else {
        found = ov.path[j] == f.pattern[j] && c.IsMap() && c[f.pattern[j]].IsDefined();
        if (found) {
          YAML::Node next = c[f.pattern[j]];
          cur.reset(next);
        }
      }
    }
    if (found && cur.IsScalar()) {
      YAML::Node full(YAML::NodeType::Map);
      full[f.key] = cur;  // shares the scalar, with its place in the file
      cur = full;         // rewrites the list entry
    }
  }
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot read the config file (" + std::strerror(errno) + ")");
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) throw Error(path + ": cannot read the config file");
  return ss.str();
}

}  // namespace

std::string ExperimentConfig::resolved_yaml() const {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << name;
  out << YAML::Key << "description" << YAML::Value << description;
  out << YAML::Key << "models" << YAML::Value << YAML::BeginSeq;
  for (const ModelSpec& m : models) {
    out << YAML::BeginMap;
    out << YAML::Key << "name" << YAML::Value << m.name;
    out << YAML::Key << "path" << YAML::Value << m.path;
    out << YAML::Key << "preprocess" << YAML::Value << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "scale" << YAML::Value << shortest(m.preprocess.scale);
    out << YAML::Key << "mean" << YAML::Value;
    emit_floats(out, m.preprocess.mean);
    out << YAML::Key << "std" << YAML::Value;
    emit_floats(out, m.preprocess.std);
    out << YAML::Key << "layout" << YAML::Value << m.preprocess.layout;
    out << YAML::EndMap << YAML::EndMap;
  }
  out << YAML::EndSeq;
  out << YAML::Key << "variants" << YAML::Value << YAML::BeginSeq;
  for (const VariantSpec& v : variants) {
    out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << v.name;
    out << YAML::Key << "steps" << YAML::Value;
    if (v.steps.empty()) out << YAML::Flow;
    out << YAML::BeginSeq;
    for (const StepSpec& s : v.steps) {
      out << YAML::BeginMap << YAML::Key << "type" << YAML::Value << s.type;
      std::vector<std::string> keys;
      if (s.params.IsMap()) {
        for (auto it = s.params.begin(); it != s.params.end(); ++it) keys.push_back(it->first.Scalar());
      }
      std::sort(keys.begin(), keys.end());
      for (const std::string& k : keys) {
        out << YAML::Key << k << YAML::Value;
        emit_sorted(out, s.params[k]);
      }
      out << YAML::EndMap;
    }
    out << YAML::EndSeq << YAML::EndMap;
  }
  out << YAML::EndSeq;
  out << YAML::Key << "targets" << YAML::Value << YAML::BeginSeq;
  for (const TargetSpec& t : targets) {
    out << YAML::BeginMap;
    out << YAML::Key << "name" << YAML::Value << t.name;
    out << YAML::Key << "kind" << YAML::Value << t.kind;
    out << YAML::Key << "threads" << YAML::Value << t.threads;
    if (!t.affinity.empty()) out << YAML::Key << "affinity" << YAML::Value << YAML::Flow << t.affinity;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
  out << YAML::Key << "metrics" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "latency" << YAML::Value;
  if (metrics.latency.enabled) {
    const LatencyMetric& l = metrics.latency;
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "enabled" << YAML::Value << true;
    out << YAML::Key << "warmup" << YAML::Value << l.warmup << YAML::Key << "runs" << YAML::Value << l.runs;
    out << YAML::Key << "min_time" << YAML::Value << shortest(l.min_time);
    out << YAML::Key << "max_runs" << YAML::Value << l.max_runs << YAML::Key << "profile" << YAML::Value << l.profile;
    out << YAML::EndMap;
  } else {
    out << false;
  }
  out << YAML::Key << "size" << YAML::Value << metrics.size.enabled;
  out << YAML::Key << "accuracy" << YAML::Value;
  if (metrics.accuracy.enabled) {
    const AccuracyMetric& a = metrics.accuracy;
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "enabled" << YAML::Value << true;
    out << YAML::Key << "dataset" << YAML::Value << a.dataset << YAML::Key << "split" << YAML::Value << a.split;
    out << YAML::Key << "limit" << YAML::Value << a.limit << YAML::Key << "path" << YAML::Value << a.path;
    out << YAML::EndMap;
  } else {
    out << false;
  }
  out << YAML::Key << "memory" << YAML::Value << metrics.memory.enabled;
  out << YAML::EndMap;
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

ExperimentConfig parse_experiment_config(const std::string& yaml_text, const std::string& path,
                                         const std::vector<std::string>& overrides, const ParseOptions& options) {
  YAML::Node root;
  try {
    root.reset(YAML::Load(yaml_text));
  } catch (const YAML::ParserException& e) {
    throw Error(path + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                ": YAML syntax error: " + e.msg);
  } catch (const YAML::Exception& e) {
    throw Error(path + ": YAML error: " + e.msg);
  }

  std::vector<Override> ovs;
  for (const std::string& text : overrides) ovs.push_back(parse_override(text));
  // `targets.0.threads=4` on a config without targets: means the default target.
  for (const Override& ov : ovs) {
    if (!root.IsMap() || ov.path.size() < 2) continue;
    const YAML::Node& croot = root;
    for (const char* section : {"targets", "variants"}) {
      if (ov.path[0] != section) continue;
      const YAML::Node existing = croot[section];
      if (existing.IsDefined() && !existing.IsNull()) continue;
      YAML::Node entry(YAML::NodeType::Map);
      if (ov.path[0] == "targets") {
        entry["kind"] = "cpu";
      } else {
        entry["name"] = "fp32";
      }
      YAML::Node seq(YAML::NodeType::Sequence);
      seq.push_back(entry);
      root[section] = seq;
    }
  }
  for (const Override& ov : ovs) {
    expand_shorthand(root, ov);
    apply_override(root, ov);
  }

  const fs::path abs = fs::absolute(fs::path(path)).lexically_normal();
  Checker checker(path, abs.parent_path(), ovs, options);
  try {
    return checker.check(root, abs.string());
  } catch (const YAML::Exception& e) {  // should not happen: the checker tests types before access
    throw Error(path + ": " + e.what());
  }
}

ExperimentConfig load_experiment_config(const std::string& path, const std::vector<std::string>& overrides,
                                        const ParseOptions& options) {
  return parse_experiment_config(read_file(path), path, overrides, options);
}

std::string config_hash(const ExperimentConfig& config) { return sha256_hex(config.resolved_yaml()); }

}  // namespace xnn::config
