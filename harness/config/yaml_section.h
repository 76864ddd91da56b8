// Strict reading of the YAML files xnn-lab's own schemas describe (training configs, NAS configs,
// architecture spaces, compression recipes): positions as FILE:LINE:COL, and one mapping at a time
// with unknown keys refused (naming the allowed keys and the likely typo) and typed values.
#pragma once
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "engine/core/error.h"

namespace xnn::config {

// "FILE:LINE:COL" of a node (1-based), or FILE when the node has no position.
std::string yaml_where(const std::string& file, const YAML::Node& node);

// One mapping of a document. An absent or null node is an empty section (every key takes its
// default); anything else but a mapping is an error. `prefix` is the key path of the mapping
// ("data.augment"), used in messages.
class YamlSection {
 public:
  YamlSection(const YAML::Node& node, std::string prefix, std::string file, const std::vector<std::string>& allowed);

  bool has(const std::string& key) const { return node_ && node_.IsMap() && node_[key]; }
  // The value, or an undefined node when the key is absent.
  YAML::Node get(const std::string& key) const { return has(key) ? node_[key] : YAML::Node(YAML::NodeType::Undefined); }
  // Reads a scalar into `out` when present; "FILE:L:C: 'prefix.key' must be EXPECTED" otherwise.
  template <typename T>
  void read(const std::string& key, T& out, const char* expected) const {
    if (!has(key)) return;
    const YAML::Node v = node_[key];
    try {
      if (!v.IsScalar()) throw YAML::Exception(v.Mark(), "not a scalar");
      out = v.as<T>();
    } catch (const YAML::Exception&) {
      throw Error(yaml_where(file_, v) + ": '" + full(key) + "' must be " + expected);
    }
  }
  // "FILE:L:C: 'prefix.key' MSG" at the key's value (or the section when the key is absent).
  [[noreturn]] void fail(const std::string& key, const std::string& msg) const;
  std::string full(const std::string& key) const { return prefix_.empty() ? key : prefix_ + "." + key; }
  const YAML::Node& node() const { return node_; }
  const std::string& file() const { return file_; }

 private:
  YAML::Node node_;
  std::string prefix_, file_;
};

}  // namespace xnn::config
