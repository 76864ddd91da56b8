#include "engine/bundle/bundle_manifest.h"

#include <algorithm>
#include <set>

#include "engine/core/error.h"

namespace xnn {

constexpr int kMaxThreads = 1024;

bool DevicePredicate::matches(const DeviceInfo& device, std::string* why_not) const {
  const auto no = [&](const std::string& reason) {
    if (why_not) *why_not = reason;
    return false;
  };
  if (isa && !device.supports(*isa)) {
    return no("device class does not match: needs isa " + std::string(bundle_isa_name(*isa)) +
              ", this device has " + device.describe());
  }
  if (device.logical_cores < min_cores) {
    return no("device class does not match: needs >= " + std::to_string(min_cores) + " logical cores, this device has " +
              std::to_string(device.logical_cores));
  }
  if (device.memory_mib < min_memory_mib) {
    return no("device class does not match: needs >= " + std::to_string(min_memory_mib) +
              " MiB of memory, this device has " + std::to_string(device.memory_mib));
  }
  if (!device_class.empty() && device.device_class != device_class) {
    return no("device class does not match: needs device class '" + device_class + "', the host app gave " +
              (device.device_class.empty() ? std::string("none") : "'" + device.device_class + "'"));
  }
  return true;
}

std::string DevicePredicate::describe() const {
  std::vector<std::string> parts;
  if (isa) parts.push_back("isa " + std::string(bundle_isa_name(*isa)));
  if (min_cores > 0) parts.push_back(">= " + std::to_string(min_cores) + " cores");
  if (min_memory_mib > 0) parts.push_back(">= " + std::to_string(min_memory_mib) + " MiB");
  if (!device_class.empty()) parts.push_back("class '" + device_class + "'");
  if (parts.empty()) return "any device";
  std::string s;
  for (const std::string& p : parts) s += (s.empty() ? "" : ", ") + p;
  return s;
}

int ThreadsSpec::resolve(int logical_cores) const {
  const int cores = std::max(1, logical_cores);
  switch (kind) {
    case Kind::kCount: return count;
    case Kind::kAll: return cores;
    case Kind::kHalf: return std::max(1, cores / 2);
  }
  return 1;
}

std::string ThreadsSpec::str() const {
  switch (kind) {
    case Kind::kCount: return std::to_string(count);
    case Kind::kAll: return "all";
    case Kind::kHalf: return "half";
  }
  return "?";
}

int BundleManifest::find_model(const std::string& id) const {
  for (size_t i = 0; i < models.size(); ++i) {
    if (models[i].id == id) return static_cast<int>(i);
  }
  return -1;
}

namespace {

bool is_model_id(const std::string& s) {
  if (s.empty() || s.size() > 128) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == '-';
  });
}

bool is_target_word(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'; });
}

bool is_sha256_hex(const std::string& s) {
  return s.size() == 64 &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

}  // namespace

void validate_manifest(const BundleManifest& m, const std::string& where) {
  const auto fail = [&](const std::string& what) { throw Error(where + ": " + what); };
  if (m.format_version != kBundleManifestVersion) {
    fail("format_version " + std::to_string(m.format_version) + " is not supported (this runtime reads version " +
         std::to_string(kBundleManifestVersion) + ")");
  }
  if (m.name.empty()) fail("name: expected a non-empty string");
  if (m.version < 1) fail("version: expected an integer >= 1, got " + std::to_string(m.version));
  if (m.models.empty()) fail("models: a bundle needs at least one model");
  if (m.policy.empty()) fail("policy: a bundle needs at least one rule");
  std::set<std::string> ids;
  for (size_t i = 0; i < m.models.size(); ++i) {
    const BundleModel& model = m.models[i];
    const std::string at = "models[" + std::to_string(i) + "]";
    if (!is_model_id(model.id)) fail(at + ".id: expected letters, digits, '_', '.' or '-' (1..128), got '" + model.id + "'");
    if (!ids.insert(model.id).second) fail(at + ".id: duplicate model id '" + model.id + "'");
    if (model.format != "xnn" && model.format != "onnx") fail(at + ".format: expected \"xnn\" or \"onnx\", got '" + model.format + "'");
    if (model.is_protected && model.format != "xnn") fail(at + ".protected: only .xnn models can be protected");
    if (model.size == 0) fail(at + ".size: a model cannot be empty");
    if (!is_sha256_hex(model.sha256)) fail(at + ".sha256: expected 64 lowercase hex digits");
  }
  for (size_t i = 0; i < m.policy.size(); ++i) {
    const PolicyRule& rule = m.policy[i];
    const std::string at = "policy[" + std::to_string(i) + "]";
    if (rule.name.empty()) fail(at + ".name: expected a non-empty string");
    if (m.find_model(rule.model) < 0) fail(at + ".model: unknown model id '" + rule.model + "'");
    if (rule.threads.kind == ThreadsSpec::Kind::kCount && (rule.threads.count < 1 || rule.threads.count > kMaxThreads)) {
      fail(at + ".threads: expected 1.." + std::to_string(kMaxThreads) + ", \"all\" or \"half\", got " +
           std::to_string(rule.threads.count));
    }
    if (!is_target_word(rule.target)) {
      fail(at + ".target: expected a target kind such as \"cpu\" (lowercase letters, digits, '_' or '-'), got '" +
           rule.target + "'");
    }
    if (rule.when.min_cores < 0) fail(at + ".when.min_cores: expected an integer >= 0");
    if (rule.when.min_memory_mib < 0) fail(at + ".when.min_memory_mib: expected an integer >= 0");
  }
}

json::Value manifest_to_json(const BundleManifest& m) {
  using json::Value;
  Value models = Value::array();
  for (const BundleModel& model : m.models) {
    models.push(Value::object()
                    .set("id", Value::string(model.id))
                    .set("file", Value::string(model.file_name))
                    .set("format", Value::string(model.format))
                    .set("protected", Value::boolean(model.is_protected))
                    .set("offset", Value::integer(static_cast<int64_t>(model.offset)))
                    .set("size", Value::integer(static_cast<int64_t>(model.size)))
                    .set("sha256", Value::string(model.sha256)));
  }
  Value policy = Value::array();
  for (const PolicyRule& rule : m.policy) {
    Value when = Value::object();
    if (rule.when.isa) when.set("isa", Value::string(std::string(bundle_isa_name(*rule.when.isa))));
    if (rule.when.min_cores > 0) when.set("min_cores", Value::integer(rule.when.min_cores));
    if (rule.when.min_memory_mib > 0) when.set("min_memory_mib", Value::integer(rule.when.min_memory_mib));
    if (!rule.when.device_class.empty()) when.set("device_class", Value::string(rule.when.device_class));
    Value threads = rule.threads.kind == ThreadsSpec::Kind::kCount ? Value::integer(rule.threads.count)
                                                                   : Value::string(rule.threads.str());
    policy.push(Value::object()
                    .set("name", Value::string(rule.name))
                    .set("when", std::move(when))
                    .set("model", Value::string(rule.model))
                    .set("threads", std::move(threads))
                    .set("target", Value::string(rule.target)));
  }
  return Value::object()
      .set("format_version", Value::integer(m.format_version))
      .set("name", Value::string(m.name))
      .set("version", Value::integer(m.version))
      .set("label", Value::string(m.label))
      .set("created_at", Value::string(m.created_at))
      .set("models", std::move(models))
      .set("policy", std::move(policy));
}

namespace {

// Reads one object with a fixed set of keys, naming the key path in every error.
class ObjectReader {
 public:
  ObjectReader(const json::Value& v, std::string path, const std::string& where,
               std::vector<std::string> required, std::vector<std::string> optional)
      : v_(v), path_(std::move(path)), where_(where) {
    if (!v.is_object()) fail(path_, "expected an object, got " + std::string(json::kind_name(v.kind())));
    for (const auto& [key, _] : v.members()) {
      if (std::find(required.begin(), required.end(), key) == required.end() &&
          std::find(optional.begin(), optional.end(), key) == optional.end()) {
        std::string expected;
        for (const auto* list : {&required, &optional}) {
          for (const std::string& k : *list) expected += (expected.empty() ? "" : ", ") + k;
        }
        fail(key_path(key), "unknown key (expected " + expected + ")");
      }
    }
    for (const std::string& key : required) {
      if (!v.find(key)) fail(path_, "missing required key '" + key + "'");
    }
  }

  const json::Value* get(const std::string& key) const { return v_.find(key); }
  std::string key_path(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

  std::string string(const std::string& key) const {
    const json::Value& x = *get(key);
    if (!x.is_string()) fail(key_path(key), "expected a string, got " + std::string(json::kind_name(x.kind())));
    return x.as_string();
  }
  int64_t integer(const std::string& key, int64_t min) const {
    const json::Value& x = *get(key);
    if (!x.is_int()) fail(key_path(key), "expected an integer, got " + std::string(json::kind_name(x.kind())));
    if (x.as_int() < min) fail(key_path(key), "expected an integer >= " + std::to_string(min) + ", got " +
                                                   std::to_string(x.as_int()));
    return x.as_int();
  }
  bool boolean(const std::string& key) const {
    const json::Value& x = *get(key);
    if (!x.is_bool()) fail(key_path(key), "expected true or false, got " + std::string(json::kind_name(x.kind())));
    return x.as_bool();
  }

  [[noreturn]] void fail(const std::string& key_path, const std::string& what) const {
    throw Error(where_ + ": manifest: " + (key_path.empty() ? "" : key_path + ": ") + what);
  }

 private:
  const json::Value& v_;
  std::string path_;
  const std::string& where_;
};

const std::vector<json::Value>& array_at(const ObjectReader& r, const std::string& key) {
  const json::Value& x = *r.get(key);
  if (!x.is_array()) r.fail(r.key_path(key), "expected an array, got " + std::string(json::kind_name(x.kind())));
  return x.items();
}

}  // namespace

BundleManifest manifest_from_json(const json::Value& value, const std::string& where) {
  BundleManifest m;
  const ObjectReader top(value, "", where, {"format_version", "name", "version", "label", "created_at", "models", "policy"}, {});
  // The format version first: a newer manifest may have keys this runtime does not know.
  m.format_version = top.integer("format_version", 1);
  if (m.format_version != kBundleManifestVersion) {
    top.fail("format_version", std::to_string(m.format_version) + " is not supported (this runtime reads version " +
                                   std::to_string(kBundleManifestVersion) + ")");
  }
  m.name = top.string("name");
  m.version = top.integer("version", 1);
  m.label = top.string("label");
  m.created_at = top.string("created_at");
  const auto& models = array_at(top, "models");
  for (size_t i = 0; i < models.size(); ++i) {
    const ObjectReader r(models[i], "models[" + std::to_string(i) + "]", where,
                         {"id", "file", "format", "protected", "offset", "size", "sha256"}, {});
    BundleModel model;
    model.id = r.string("id");
    model.file_name = r.string("file");
    model.format = r.string("format");
    model.is_protected = r.boolean("protected");
    model.offset = static_cast<uint64_t>(r.integer("offset", 0));
    model.size = static_cast<uint64_t>(r.integer("size", 1));
    model.sha256 = r.string("sha256");
    m.models.push_back(std::move(model));
  }
  const auto& policy = array_at(top, "policy");
  for (size_t i = 0; i < policy.size(); ++i) {
    const std::string at = "policy[" + std::to_string(i) + "]";
    const ObjectReader r(policy[i], at, where, {"when", "model", "threads", "target"}, {"name"});
    PolicyRule rule;
    rule.name = r.get("name") ? r.string("name") : "rule " + std::to_string(i + 1);
    const ObjectReader w(*r.get("when"), at + ".when", where, {}, {"isa", "min_cores", "min_memory_mib", "device_class"});
    if (w.get("isa")) {
      BundleIsa isa{};
      const std::string name = w.string("isa");
      if (!parse_bundle_isa(name, isa)) {
        w.fail(w.key_path("isa"), "expected scalar, avx2, avx512 or neon, got '" + name + "'");
      }
      rule.when.isa = isa;
    }
    if (w.get("min_cores")) rule.when.min_cores = static_cast<int>(std::min<int64_t>(w.integer("min_cores", 0), 1 << 20));
    if (w.get("min_memory_mib")) rule.when.min_memory_mib = w.integer("min_memory_mib", 0);
    if (w.get("device_class")) rule.when.device_class = w.string("device_class");
    rule.model = r.string("model");
    const json::Value& threads = *r.get("threads");
    if (threads.is_string() && threads.as_string() == "all") {
      rule.threads.kind = ThreadsSpec::Kind::kAll;
    } else if (threads.is_string() && threads.as_string() == "half") {
      rule.threads.kind = ThreadsSpec::Kind::kHalf;
    } else if (threads.is_int() && threads.as_int() >= 1 && threads.as_int() <= kMaxThreads) {
      rule.threads.count = static_cast<int>(threads.as_int());
    } else {
      r.fail(r.key_path("threads"), "expected 1.." + std::to_string(kMaxThreads) + ", \"all\" or \"half\", got " +
                                        json::dump(threads));
    }
    rule.target = r.string("target");
    m.policy.push_back(std::move(rule));
  }
  validate_manifest(m, where + ": manifest");
  return m;
}

}  // namespace xnn
