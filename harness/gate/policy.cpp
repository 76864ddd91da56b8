#include "harness/gate/policy.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <optional>
#include <sstream>

#include "engine/core/error.h"
#include "harness/config/experiment_config.h"

namespace xnn::gate {
namespace {

// The keys a rule may set; what the file says is applied over the defaults (and a model's over
// the metric's).
struct RulePatch {
  std::optional<bool> enabled, absolute;
  std::optional<double> regression, improvement;
  void apply(MetricRule& r) const {
    if (enabled) r.enabled = *enabled;
    if (absolute) r.absolute = *absolute;
    if (regression) r.regression = *regression;
    if (improvement) r.improvement = *improvement;
  }
};

std::string comma_list(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s;
}

// A likely typo (config::did_you_mean), else a name that contains the key or is contained in it:
// `model_size_bytes` -> size_bytes, `latency` -> latency_ms.
std::string suggest(const std::string& key, const std::vector<std::string>& allowed) {
  std::string best = config::did_you_mean(key, allowed);
  if (!best.empty() || key.size() < 3) return best;
  for (const std::string& a : allowed) {
    if (key.find(a) != std::string::npos || a.find(key) != std::string::npos) return a;
  }
  return "";
}

std::vector<std::string> metric_names() {
  std::vector<std::string> names;
  for (const GatedMetric& m : gated_metrics()) names.push_back(m.name);
  return names;
}

// Validation with the experiment config's conventions: "FILE:LINE:COL: key.path: message".
class PolicyChecker {
 public:
  explicit PolicyChecker(std::string file) : file_(std::move(file)) {}

  Policy check(const YAML::Node& root) {
    Policy p = default_policy();
    p.source = file_;
    if (!root.IsDefined() || root.IsNull()) return p;  // an empty file: the defaults
    static const std::vector<std::string> top = {"alpha", "min_samples", "max_cv", "metrics", "models"};
    std::map<std::string, RulePatch> metric_patches;
    std::map<std::string, std::map<std::string, RulePatch>> model_patches;
    for (const auto& [key, kv] : entries(root, root.Mark(), "", &top, "a map of policy settings")) {
      const YAML::Node& v = kv.second;
      const YAML::Mark m = mark_of(kv);
      if (key == "alpha") {
        p.alpha = number(v, m, key, "a number between 0 and 1 (exclusive)");
        if (!(p.alpha > 0 && p.alpha < 1)) fail(m, key, "expected a number between 0 and 1 (exclusive), got " + v.Scalar());
      } else if (key == "min_samples") {
        p.min_samples = integer(v, m, key, 2);
      } else if (key == "max_cv") {
        p.max_cv = number(v, m, key, "a number > 0");
        if (!(p.max_cv > 0)) fail(m, key, "expected a number > 0, got " + v.Scalar());
      } else if (key == "metrics") {
        const std::vector<std::string> names = metric_names();
        for (const auto& [metric, mv] : entries(v, m, "metrics", &names, "a map of metric names to rules")) {
          metric_patches[metric] = rule_patch(mv.second, mark_of(mv), "metrics." + metric);
        }
      } else if (key == "models") {
        for (const auto& [model, mv] : entries(v, m, "models", nullptr, "a map of model names to metric rules")) {
          const std::vector<std::string> names = metric_names();
          const std::string where = "models." + model;
          for (const auto& [metric, rv] : entries(mv.second, mark_of(mv), where, &names, "a map of metric names to rules")) {
            model_patches[model][metric] = rule_patch(rv.second, mark_of(rv), where + "." + metric);
          }
        }
      }
    }
    for (const auto& [metric, patch] : metric_patches) patch.apply(p.metrics[metric]);
    for (const auto& [model, patches] : model_patches) {
      for (const auto& [metric, patch] : patches) {
        MetricRule r = p.metrics[metric];
        patch.apply(r);
        p.models[model][metric] = r;
      }
    }
    return p;
  }

 private:
  using KeyValue = std::pair<YAML::Node, YAML::Node>;  // key node (for its mark), value node

  // For an empty value (`key:` with nothing after it) yaml-cpp has no mark of its own: use the key's.
  static YAML::Mark mark_of(const KeyValue& kv) { return kv.second.IsNull() ? kv.first.Mark() : kv.second.Mark(); }

  std::string at(const YAML::Mark& m) const {
    if (m.is_null()) return file_;
    return file_ + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
  }
  [[noreturn]] void fail(const YAML::Mark& m, const std::string& path, const std::string& msg) const {
    throw Error(at(m) + ": " + (path.empty() ? "" : path + ": ") + msg);
  }
  static std::string describe(const YAML::Node& n) {
    if (!n.IsDefined() || n.IsNull()) return "an empty value";
    if (n.IsSequence()) return "a list";
    if (n.IsMap()) return "a map";
    return "'" + n.Scalar() + "'";
  }

  // A map's entries in file order; with `allowed`, unknown keys are errors naming the key.
  std::vector<std::pair<std::string, KeyValue>> entries(const YAML::Node& n, const YAML::Mark& m, const std::string& path,
                                                        const std::vector<std::string>* allowed,
                                                        const std::string& expected) const {
    if (!n.IsMap()) fail(m, path, "expected " + expected + ", got " + describe(n));
    std::vector<std::pair<std::string, KeyValue>> out;
    for (auto it = n.begin(); it != n.end(); ++it) {
      const YAML::Node k = it->first;
      const YAML::Node v = it->second;
      if (!k.IsScalar()) fail(k.Mark(), path, "expected a key name, got " + describe(k));
      const std::string key = k.Scalar();
      const std::string section = path.empty() ? "at the top level" : "in " + path;
      if (allowed && std::find(allowed->begin(), allowed->end(), key) == allowed->end()) {
        const std::string best = suggest(key, *allowed);
        throw Error(at(k.Mark()) + ": unknown key '" + key + "' " + section +
                    (best.empty() ? "" : " (did you mean '" + best + "'?)") + "; expected one of: " + comma_list(*allowed));
      }
      for (const auto& e : out) {
        if (e.first == key) throw Error(at(k.Mark()) + ": duplicate key '" + key + "' " + section);
      }
      out.push_back({key, {k, v}});
    }
    return out;
  }

  double number(const YAML::Node& n, const YAML::Mark& m, const std::string& path, const std::string& expected) const {
    if (!n.IsScalar()) fail(m, path, "expected " + expected + ", got " + describe(n));
    const std::string& s = n.Scalar();
    const char* b = s.data() + (s.size() > 1 && s[0] == '+' ? 1 : 0);
    double v = 0;
    const auto r = std::from_chars(b, s.data() + s.size(), v);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size() || !std::isfinite(v))
      fail(m, path, "expected " + expected + ", got '" + s + "'");
    return v;
  }

  int integer(const YAML::Node& n, const YAML::Mark& m, const std::string& path, int min) const {
    const std::string expected = "an integer >= " + std::to_string(min);
    if (!n.IsScalar()) fail(m, path, "expected " + expected + ", got " + describe(n));
    const std::string& s = n.Scalar();
    int v = 0;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size()) fail(m, path, "expected " + expected + ", got '" + s + "'");
    if (v < min) fail(m, path, "expected " + expected + ", got " + s);
    return v;
  }

  bool boolean(const YAML::Node& n, const YAML::Mark& m, const std::string& path) const {
    if (n.IsScalar()) {
      const std::string& s = n.Scalar();
      if (s == "true" || s == "yes" || s == "on") return true;
      if (s == "false" || s == "no" || s == "off") return false;
    }
    fail(m, path, "expected true or false, got " + describe(n));
  }

  RulePatch rule_patch(const YAML::Node& n, const YAML::Mark& m, const std::string& path) const {
    static const std::vector<std::string> keys = {"regression", "improvement", "absolute", "enabled"};
    RulePatch p;
    if (n.IsScalar() && (n.Scalar() == "false" || n.Scalar() == "true")) {  // `size_bytes: false` switches it off
      p.enabled = n.Scalar() == "true";
      return p;
    }
    for (const auto& [key, kv] : entries(n, m, path, &keys, "a map with regression, improvement, absolute or enabled")) {
      const YAML::Mark vm = mark_of(kv);
      const std::string kp = path + "." + key;
      if (key == "regression" || key == "improvement") {
        const double v = number(kv.second, vm, kp, "a number >= 0");
        if (v < 0) fail(vm, kp, "expected a number >= 0, got " + kv.second.Scalar());
        (key == "regression" ? p.regression : p.improvement) = v;
      } else if (key == "absolute") {
        p.absolute = boolean(kv.second, vm, kp);
      } else {
        p.enabled = boolean(kv.second, vm, kp);
      }
    }
    return p;
  }

  std::string file_;
};

}  // namespace

const std::vector<GatedMetric>& gated_metrics() {
  static const std::vector<GatedMetric> kMetrics = {
      {"latency_ms", "latency_ms", "latency_ms_median", false, 1, "ms", MetricRule{true, 0.05, 0.05, false}},
      {"size_bytes", "", "size_bytes", false, 1, "bytes", MetricRule{true, 0.01, 0.01, false}},
      {"top1", "", "top1", true, 100, "%", MetricRule{true, 0.3, 0.3, true}},
      {"top5", "", "top5", true, 100, "%", MetricRule{true, 0.3, 0.3, true}},
  };
  return kMetrics;
}

const GatedMetric* find_gated_metric(const std::string& name) {
  for (const GatedMetric& m : gated_metrics()) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

const MetricRule& Policy::rule(const std::string& model, const std::string& metric) const {
  auto mi = models.find(model);
  if (mi != models.end()) {
    auto ri = mi->second.find(metric);
    if (ri != mi->second.end()) return ri->second;
  }
  auto it = metrics.find(metric);
  XNN_CHECK(it != metrics.end(), "gate policy: no rule for metric '" + metric + "'");
  return it->second;
}

Policy default_policy() {
  Policy p;
  for (const GatedMetric& m : gated_metrics()) p.metrics[m.name] = m.default_rule;
  return p;
}

Policy parse_policy(const std::string& yaml_text, const std::string& path) {
  YAML::Node root;
  try {
    root.reset(YAML::Load(yaml_text));
  } catch (const YAML::ParserException& e) {
    throw Error(path + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                ": YAML syntax error: " + e.msg);
  } catch (const YAML::Exception& e) {
    throw Error(path + ": YAML error: " + e.msg);
  }
  return PolicyChecker(path).check(root);
}

Policy load_policy(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw Error(path + ": cannot read the gate policy file");
  std::stringstream text;
  text << f.rdbuf();
  return parse_policy(text.str(), path);
}

}  // namespace xnn::gate
