#include "harness/targets/target.h"

#include "engine/core/error.h"

namespace xnn {

void TargetRegistry::add(const std::string& kind, std::string summary, Factory factory) {
  entries_[kind] = Entry{std::move(summary), std::move(factory)};
}

const TargetRegistry::Entry* TargetRegistry::find(const std::string& kind) const {
  auto it = entries_.find(kind);
  if (it != entries_.end()) return &it->second;
  for (const auto& [k, e] : entries_) {
    if (!k.empty() && k.back() == ':' && kind.rfind(k, 0) == 0 && kind.size() > k.size()) return &e;
  }
  return nullptr;
}

bool TargetRegistry::knows(const std::string& kind) const { return find(kind) != nullptr; }

std::vector<std::string> TargetRegistry::kinds() const {
  std::vector<std::string> out;
  for (const auto& [k, e] : entries_) out.push_back(k.back() == ':' ? k + "<profile>" : k);
  return out;
}

std::unique_ptr<Target> TargetRegistry::create(const TargetSettings& settings) const {
  const Entry* e = find(settings.kind);
  if (!e) {
    std::string known;
    for (const std::string& k : kinds()) known += (known.empty() ? "" : ", ") + k;
    throw Error("unknown target kind '" + settings.kind + "'; known kinds: " + known);
  }
  return e->factory(settings);
}

}  // namespace xnn
