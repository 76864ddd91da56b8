// The predictor file: LatencyPredictor to and from JSON. Floats are written with 9
// significant digits (exact for float), so a saved and reloaded predictor predicts the same
// numbers bit for bit.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "engine/core/error.h"
#include "engine/core/json.h"
#include "harness/predict/latency_predictor.h"
#include "harness/util/json.h"

namespace xnn::predict {
namespace {

constexpr const char* kFormat = "xnn-lab-latency-predictor";
constexpr int kVersion = 1;

std::string exact(double v) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}
std::string exact_float(float v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%.9g", static_cast<double>(v));
  return buf;
}

void write_forest(json::Writer& w, const RandomForest& forest) {
  w.key("trees").begin_array();
  for (const RegressionTree& t : forest.trees()) {
    // Three parallel arrays: split feature (-1: leaf), threshold or leaf value, right child.
    std::string f = "[", v = "[", r = "[";
    for (size_t i = 0; i < t.nodes.size(); ++i) {
      if (i) {
        f += ',';
        v += ',';
        r += ',';
      }
      f += std::to_string(t.nodes[i].feature);
      v += exact_float(t.nodes[i].value);
      r += std::to_string(t.nodes[i].right);
    }
    w.begin_object();
    w.key("feature").raw(f + "]");
    w.key("value").raw(v + "]");
    w.key("right").raw(r + "]");
    w.end_object();
  }
  w.end_array();
}

double number_at(const json::Value& obj, const std::string& key) { return obj.at(key).number("\"" + key + "\""); }

int32_t index_value(const json::Value& v, const std::string& what) {
  const double d = v.number(what);
  if (d != static_cast<double>(static_cast<int32_t>(d))) v.fail(what, "an integer");
  return static_cast<int32_t>(d);
}

RandomForest read_forest(const json::Value& model, const std::string& key) {
  const std::string where = "model \"" + key + "\"";
  std::vector<RegressionTree> trees;
  const auto& arr = model.at("trees").list(where + " \"trees\"");
  if (arr.empty()) model.at("trees").fail(where + " \"trees\"", "at least one tree");
  for (size_t t = 0; t < arr.size(); ++t) {
    const std::string tw = where + " tree " + std::to_string(t);
    const auto& f = arr[t].at("feature").list(tw + " \"feature\"");
    const auto& v = arr[t].at("value").list(tw + " \"value\"");
    const auto& r = arr[t].at("right").list(tw + " \"right\"");
    if (f.size() != v.size() || f.size() != r.size()) arr[t].fail(tw, "\"feature\", \"value\" and \"right\" of equal length");
    RegressionTree tree;
    tree.nodes.resize(f.size());
    for (size_t i = 0; i < f.size(); ++i) {
      tree.nodes[i].feature = index_value(f[i], tw + " \"feature\"");
      tree.nodes[i].value = static_cast<float>(v[i].number(tw + " \"value\""));
      tree.nodes[i].right = index_value(r[i], tw + " \"right\"");
    }
    trees.push_back(std::move(tree));
  }
  try {
    return RandomForest::from_trees(kOpFeatureCount, std::move(trees));
  } catch (const Error& e) {
    model.fail(where, std::string("a valid forest (") + e.what() + ")");
  }
}

}  // namespace

std::string LatencyPredictor::to_json() const {
  json::Writer w;
  w.begin_object().field("format", kFormat).field("version", kVersion);
  w.key("target").begin_object().field("name", info_.target_name).field("kind", info_.target_kind);
  w.field("threads", info_.threads).end_object();
  w.field("created_at", info_.created_at);
  w.key("features").begin_array();
  for (const char* n : op_feature_names()) w.value(n);
  w.end_array();
  w.key("fit").begin_object().field("models", info_.models).field("op_samples", info_.op_samples);
  w.field("kernel_models", info_.kernel_models).field("op_kind_models", info_.op_kind_models);
  const PredictionMetrics& c = info_.calibration;
  w.key("calibration").begin_object().field("count", c.count).field("within_10", c.within_10);
  w.field("rmse_ms", c.rmse_ms).field("rmse_percent", c.rmse_percent).field("mape_percent", c.mape_percent);
  w.field("spearman", c.spearman).end_object().end_object();
  w.key("model_level").begin_object();
  w.key("a_ms").raw(exact(a_ms_)).key("b").raw(exact(b_)).key("residual_rel_std").raw(exact(rel_std_));
  w.end_object();
  w.key("roofline").begin_object();
  w.key("c0_ms").raw(exact(roofline_.c0)).key("ms_per_mac").raw(exact(roofline_.c_macs));
  w.key("ms_per_byte").raw(exact(roofline_.c_bytes)).key("rel_std").raw(exact(roofline_rel_std_));
  w.end_object();
  // Sorted keys: the same predictor always writes the same file.
  auto emit = [&](const char* key, const char* level, const std::unordered_map<std::string, OpModel>& models) {
    std::map<std::string, const OpModel*> sorted;
    for (const auto& [k, m] : models) sorted[k] = &m;
    w.key(key).begin_array();
    for (const auto& [k, m] : sorted) {
      w.begin_object().field("key", k).field("level", level).field("samples", m->samples);
      write_forest(w, m->forest);
      w.end_object();
    }
    w.end_array();
  };
  emit("kernel_models", "kernel", kernel_models_);
  emit("op_models", "op", op_models_);
  w.end_object();
  return w.str() + "\n";
}

LatencyPredictor LatencyPredictor::from_json(const std::string& text, const std::string& source) {
  const json::Value root = json::parse(text, source);  // syntax errors name the source
  try {
    return from_json_value(root);
  } catch (const Error& e) {
    throw Error(source + ":" + e.what());  // "SOURCE:LINE: what: expected ..."
  }
}

LatencyPredictor LatencyPredictor::from_json_value(const json::Value& root) {
  if (root.kind() != json::Value::Kind::kObject) root.fail("the file", "a JSON object (a predictor written by xnn-lab calibrate)");
  const json::Value* format = root.find("format");
  if (!format || format->kind() != json::Value::Kind::kString || format->text("format") != kFormat) {
    root.fail("\"format\"", std::string("\"") + kFormat + "\" (is this a predictor written by xnn-lab calibrate?)");
  }
  const json::Value& version = root.at("version");
  if (version.number("\"version\"") != kVersion) version.fail("\"version\"", std::to_string(kVersion));
  const json::Value& features = root.at("features");
  const auto& names = features.list("\"features\"");
  bool same = names.size() == static_cast<size_t>(kOpFeatureCount);
  for (size_t i = 0; same && i < names.size(); ++i) same = names[i].text("\"features\" entry") == op_feature_names()[i];
  if (!same) features.fail("\"features\"", "this build's feature list (the predictor is from another version: recalibrate)");

  LatencyPredictor p;
  const json::Value& target = root.at("target");
  p.info_.target_name = target.at("name").text("target \"name\"");
  p.info_.target_kind = target.at("kind").text("target \"kind\"");
  p.info_.threads = static_cast<int>(number_at(target, "threads"));
  if (const json::Value* c = root.find("created_at")) p.info_.created_at = c->text("\"created_at\"");
  const json::Value& fit = root.at("fit");
  p.info_.models = static_cast<int>(number_at(fit, "models"));
  p.info_.op_samples = static_cast<int>(number_at(fit, "op_samples"));
  const json::Value& cal = fit.at("calibration");
  p.info_.calibration.count = static_cast<int>(number_at(cal, "count"));
  p.info_.calibration.within_10 = number_at(cal, "within_10");
  p.info_.calibration.rmse_ms = number_at(cal, "rmse_ms");
  p.info_.calibration.rmse_percent = number_at(cal, "rmse_percent");
  p.info_.calibration.mape_percent = number_at(cal, "mape_percent");
  const json::Value& sp = cal.at("spearman");
  p.info_.calibration.spearman = sp.kind() == json::Value::Kind::kNull ? std::nan("") : sp.number("\"spearman\"");
  const json::Value& ml = root.at("model_level");
  p.a_ms_ = number_at(ml, "a_ms");
  p.b_ = number_at(ml, "b");
  p.rel_std_ = number_at(ml, "residual_rel_std");
  const json::Value& rf = root.at("roofline");
  p.roofline_.c0 = number_at(rf, "c0_ms");
  p.roofline_.c_macs = number_at(rf, "ms_per_mac");
  p.roofline_.c_bytes = number_at(rf, "ms_per_byte");
  p.roofline_rel_std_ = number_at(rf, "rel_std");
  auto read = [&](const char* key, std::unordered_map<std::string, OpModel>& out) {
    for (const json::Value& m : root.at(key).list(std::string("\"") + key + "\"")) {
      const std::string name = m.at("key").text("model \"key\"");
      OpModel om;
      om.samples = static_cast<int>(number_at(m, "samples"));
      om.forest = read_forest(m, name);
      out[name] = std::move(om);
    }
  };
  read("kernel_models", p.kernel_models_);
  read("op_models", p.op_models_);
  p.info_.kernel_models = static_cast<int>(p.kernel_models_.size());
  p.info_.op_kind_models = static_cast<int>(p.op_models_.size());
  return p;
}

void LatencyPredictor::save(const std::string& path) const {
  const std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw Error(path + ": cannot write the predictor file");
    f << to_json();
    if (!f) throw Error(path + ": cannot write the predictor file");
  }
  std::filesystem::rename(tmp, path);  // atomic: a reader never sees half a file
}

LatencyPredictor LatencyPredictor::load(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot read the predictor file (run `xnn-lab calibrate` first, or pass --predictor FILE)");
  std::stringstream ss;
  ss << f.rdbuf();
  return from_json(ss.str(), path);
}

}  // namespace xnn::predict
