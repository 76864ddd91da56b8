#include "engine/core/error.h"
#include "harness/steps/step.h"

namespace xnn {

void StepRegistry::add(const std::string& type, std::string summary, Factory factory) {
  entries_[type] = Entry{std::move(summary), std::move(factory)};
}

std::vector<std::string> StepRegistry::types() const {
  std::vector<std::string> out;
  for (const auto& [k, e] : entries_) out.push_back(k);
  return out;
}

std::unique_ptr<Step> StepRegistry::create(const std::string& type, const YAML::Node& params,
                                           const std::string& location) const {
  auto it = entries_.find(type);
  if (it == entries_.end()) {
    std::string known;
    for (const auto& [k, e] : entries_) known += (known.empty() ? "" : ", ") + k;
    throw Error(location + ": unknown step '" + type + "'; known steps: " + known);
  }
  return it->second.factory(params, location);
}

void check_step_params(const YAML::Node& params, const std::string& step, const std::string& location,
                       const std::vector<std::string>& allowed) {
  if (!params || params.IsNull()) return;
  if (!params.IsMap()) throw Error(location + ": step '" + step + "' parameters must be a mapping");
  for (const auto& kv : params) {
    const std::string key = kv.first.as<std::string>();
    bool ok = false;
    for (const std::string& a : allowed) ok = ok || a == key;
    if (!ok) {
      std::string list;
      for (const std::string& a : allowed) list += (list.empty() ? "" : ", ") + a;
      throw Error(location + ": step '" + step + "' has no parameter '" + key + "'" +
                  (list.empty() ? " (it takes none)" : "; expected one of: " + list));
    }
  }
}

}  // namespace xnn
