#include "harness/config/yaml_section.h"

#include <algorithm>

#include "harness/config/experiment_config.h"

namespace xnn::config {

std::string yaml_where(const std::string& file, const YAML::Node& node) {
  const YAML::Mark m = node.Mark();
  if (m.is_null()) return file;
  return file + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

YamlSection::YamlSection(const YAML::Node& node, std::string prefix, std::string file,
                         const std::vector<std::string>& allowed)
    : node_(node), prefix_(std::move(prefix)), file_(std::move(file)) {
  if (!node_ || node_.IsNull()) return;
  if (!node_.IsMap()) throw Error(yaml_where(file_, node_) + ": '" + prefix_ + "' must be a mapping");
  for (const auto& kv : node_) {
    const std::string key = kv.first.as<std::string>();
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    const std::string guess = did_you_mean(key, allowed);
    throw Error(yaml_where(file_, kv.first) + ": unknown key '" + full(key) + "'" +
                (guess.empty() ? "" : " (did you mean '" + guess + "'?)") + "; expected one of: " + list);
  }
}

void YamlSection::fail(const std::string& key, const std::string& msg) const {
  throw Error(yaml_where(file_, has(key) ? node_[key] : node_) + ": '" + full(key) + "' " + msg);
}

}  // namespace xnn::config
