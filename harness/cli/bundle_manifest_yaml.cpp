#include "harness/cli/bundle_manifest_yaml.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>

#include "engine/core/error.h"
#include "harness/config/experiment_config.h"  // did_you_mean

namespace xnn::cli {
namespace fs = std::filesystem;
namespace {

std::string describe(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "an empty value";
  if (n.IsSequence()) return n.size() == 0 ? "an empty list" : "a list";
  if (n.IsMap()) return n.size() == 0 ? "an empty map" : "a map";
  return "'" + n.Scalar() + "'";
}

// A node with its key path ("policy[1].threads") and where it was written.
struct At {
  std::string path;
  YAML::Node node;
  YAML::Mark mark;
};

class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const At& at, const std::string& what) const {
    std::string where = file_;
    if (!at.mark.is_null()) where += ":" + std::to_string(at.mark.line + 1) + ":" + std::to_string(at.mark.column + 1);
    throw Error(where + ": " + (at.path.empty() ? "" : at.path + ": ") + what);
  }

  // The entries of a map; keys outside required + optional are refused, required ones must be there.
  std::map<std::string, At> entries(const At& at, const std::vector<std::string>& required,
                                    const std::vector<std::string>& optional) const {
    if (!at.node.IsMap()) fail(at, "expected a map, got " + describe(at.node));
    std::vector<std::string> allowed = required;
    allowed.insert(allowed.end(), optional.begin(), optional.end());
    std::map<std::string, At> out;
    for (auto it = at.node.begin(); it != at.node.end(); ++it) {
      const YAML::Node k = it->first;
      const std::string key = k.IsScalar() ? k.Scalar() : "";
      const std::string kp = at.path.empty() ? key : at.path + "." + key;
      if (!k.IsScalar()) fail(At{at.path, k, k.Mark()}, "expected a key name, got " + describe(k));
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        const std::string best = config::did_you_mean(key, allowed);
        std::string list;
        for (const std::string& a : allowed) list += (list.empty() ? "" : ", ") + a;
        fail(At{kp, k, k.Mark()}, "unknown key" + (best.empty() ? "" : " (did you mean '" + best + "'?)") +
                                      "; expected one of: " + list);
      }
      if (out.count(key)) fail(At{kp, k, k.Mark()}, "duplicate key");
      const YAML::Node v = it->second;
      out.emplace(key, At{kp, v, v.IsNull() ? k.Mark() : v.Mark()});
    }
    for (const std::string& key : required) {
      if (!out.count(key)) fail(at, "missing required key '" + key + "'");
    }
    return out;
  }

  std::vector<At> list(const At& at, const std::string& what) const {
    if (!at.node.IsSequence() || at.node.size() == 0) fail(at, "expected a non-empty list of " + what + ", got " + describe(at.node));
    std::vector<At> out;
    for (size_t i = 0; i < at.node.size(); ++i) {
      const YAML::Node n = at.node[i];
      out.push_back(At{at.path + "[" + std::to_string(i) + "]", n, n.IsNull() ? at.mark : n.Mark()});
    }
    return out;
  }

  std::string str(const At& at, bool allow_empty = false) const {
    if (!at.node.IsScalar()) fail(at, "expected a string, got " + describe(at.node));
    if (!allow_empty && at.node.Scalar().empty()) fail(at, "expected a non-empty string");
    return at.node.Scalar();
  }

  int64_t integer(const At& at, int64_t min, int64_t max) const {
    const std::string expected = "an integer in " + std::to_string(min) + ".." + std::to_string(max);
    if (!at.node.IsScalar()) fail(at, "expected " + expected + ", got " + describe(at.node));
    const std::string& s = at.node.Scalar();
    int64_t v = 0;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size() || v < min || v > max) {
      fail(at, "expected " + expected + ", got '" + s + "'");
    }
    return v;
  }

 private:
  std::string file_;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

std::string utc_timestamp_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

BundleSource read_bundle_yaml(const std::string& path, const std::string& now_utc) {
  if (!fs::is_regular_file(path)) throw Error(path + ": cannot open bundle manifest (does it exist?)");
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::ParserException& e) {
    throw Error(path + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                ": YAML syntax error: " + e.msg);
  } catch (const YAML::Exception& e) {
    throw Error(path + ": YAML error: " + e.msg);
  }
  const Reader r(path);
  const fs::path dir = fs::path(path).parent_path();
  BundleSource out;
  BundleManifest& m = out.manifest;
  const auto top = r.entries(At{"", root, root.Mark()}, {"name", "version", "models", "policy"}, {"label", "created_at"});
  m.name = r.str(top.at("name"));
  m.version = r.integer(top.at("version"), 1, INT64_MAX);
  m.label = top.count("label") ? r.str(top.at("label"), true) : "";
  m.created_at = top.count("created_at") ? r.str(top.at("created_at")) : now_utc;

  std::map<std::string, At> model_ids;
  for (const At& item : r.list(top.at("models"), "models (id and path)")) {
    const auto e = r.entries(item, {"id", "path"}, {});
    const At& id_at = e.at("id");
    const std::string id = r.str(id_at);
    const bool id_ok = id.size() <= 128 && std::all_of(id.begin(), id.end(), [](char c) {
                         return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
                       });
    if (!id_ok) r.fail(id_at, "expected letters, digits, '_', '.' or '-' (at most 128), got '" + id + "'");
    if (model_ids.count(id)) {
      r.fail(id_at, "duplicate model id '" + id + "' (first at line " + std::to_string(model_ids.at(id).mark.line + 1) + ")");
    }
    model_ids.emplace(id, id_at);
    const At& path_at = e.at("path");
    const std::string rel = r.str(path_at);
    const fs::path file = fs::path(rel).is_absolute() ? fs::path(rel) : dir / rel;
    if (!fs::is_regular_file(file)) r.fail(path_at, "model file " + file.string() + " does not exist");
    std::string bytes = read_file(file.string());
    if (bytes.empty()) r.fail(path_at, "model file " + file.string() + " is empty or unreadable");
    out.models.push_back(BundleModelInput{id, file.filename().string(), std::move(bytes)});
  }

  for (const At& item : r.list(top.at("policy"), "rules")) {
    const auto e = r.entries(item, {"model"}, {"name", "when", "threads", "target"});
    PolicyRule rule;
    rule.name = e.count("name") ? r.str(e.at("name")) : "rule " + std::to_string(m.policy.size() + 1);
    rule.model = r.str(e.at("model"));
    if (!model_ids.count(rule.model)) {
      std::vector<std::string> ids;
      for (const auto& [id, _] : model_ids) ids.push_back(id);
      const std::string best = config::did_you_mean(rule.model, ids);
      r.fail(e.at("model"), "unknown model id '" + rule.model + "'" +
                                (best.empty() ? "" : " (did you mean '" + best + "'?)") + "; models: " + [&] {
                                  std::string s;
                                  for (const std::string& id : ids) s += (s.empty() ? "" : ", ") + id;
                                  return s;
                                }());
    }
    if (e.count("when") && !e.at("when").node.IsNull()) {
      const auto w = r.entries(e.at("when"), {}, {"isa", "min_cores", "min_memory_mib", "device_class"});
      if (w.count("isa")) {
        BundleIsa isa{};
        const std::string name = r.str(w.at("isa"));
        if (!parse_bundle_isa(name, isa)) r.fail(w.at("isa"), "expected scalar, avx2, avx512 or neon, got '" + name + "'");
        rule.when.isa = isa;
      }
      if (w.count("min_cores")) rule.when.min_cores = static_cast<int>(r.integer(w.at("min_cores"), 0, 1 << 20));
      if (w.count("min_memory_mib")) rule.when.min_memory_mib = r.integer(w.at("min_memory_mib"), 0, INT64_MAX / 2);
      if (w.count("device_class")) rule.when.device_class = r.str(w.at("device_class"));
    }
    if (e.count("threads")) {
      const At& t = e.at("threads");
      const std::string s = t.node.IsScalar() ? t.node.Scalar() : "";
      if (s == "all") {
        rule.threads.kind = ThreadsSpec::Kind::kAll;
      } else if (s == "half") {
        rule.threads.kind = ThreadsSpec::Kind::kHalf;
      } else {
        int64_t n = 0;
        const auto res = std::from_chars(s.data(), s.data() + s.size(), n);
        if (!t.node.IsScalar() || res.ec != std::errc() || res.ptr != s.data() + s.size() || n < 1 || n > 1024) {
          r.fail(t, "expected a thread count 1..1024, 'all' or 'half', got " + describe(t.node));
        }
        rule.threads.count = static_cast<int>(n);
      }
    }
    if (e.count("target")) {
      rule.target = r.str(e.at("target"));
      const bool word = std::all_of(rule.target.begin(), rule.target.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
      });
      if (!word || rule.target.size() > 64) {
        r.fail(e.at("target"), "expected a target kind such as 'cpu' (lowercase letters, digits, '_' or '-'), got '" +
                                   rule.target + "'");
      }
    }
    m.policy.push_back(std::move(rule));
  }
  return out;
}

}  // namespace xnn::cli
