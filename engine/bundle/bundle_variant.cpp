#include "engine/bundle/bundle_variant.h"

#include <algorithm>

#include "engine/core/error.h"
#include "engine/format/xnn_format.h"
#include "engine/onnx/onnx_import.h"

namespace xnn {

bool bundle_target_available(const std::string& target) { return target == "cpu"; }

std::shared_ptr<Model> load_bundle_model(const BundleFile& bundle, size_t index, const std::optional<ModelKey>& key) {
  const BundleModel& m = bundle.manifest().models.at(index);
  if (!bundle.blob_problem(index).empty()) throw Error(bundle.path() + ": " + bundle.blob_problem(index));
  const std::string name = bundle.path() + ":" + m.id;
  const std::string_view bytes = bundle.blob(index);
  std::shared_ptr<Model> model;
  if (m.is_protected) {
    if (!key) throw Error(name + " is protected: the bundle needs a key (--key-file KEY; API: BundleOptions::key)");
    model = std::make_shared<Model>(load_protected_xnn_bytes(bytes.data(), bytes.size(), *key, name));
  } else if (m.format == "xnn") {
    model = std::make_shared<Model>(load_xnn_bytes(bytes.data(), bytes.size(), name));
  } else {
    // No base folder: a bundled ONNX model must not reach for external files.
    model = std::make_shared<Model>(import_onnx_bytes(bytes.data(), bytes.size(), name, ""));
  }
  model->graph.validate(name);
  return model;
}

std::string_view rule_status_name(RuleOutcome::Status status) {
  switch (status) {
    case RuleOutcome::Status::kChosen: return "chosen";
    case RuleOutcome::Status::kSkipped: return "skipped";
    case RuleOutcome::Status::kNotTried: return "not tried";
  }
  return "?";
}

std::string VariantSelection::failure_summary(const BundleFile& bundle, const DeviceInfo& device) const {
  std::string s = "no rule of bundle " + bundle.path() + " can run on this device (" + device.describe() + ")";
  for (const RuleOutcome& o : outcomes) {
    s += "; rule " + std::to_string(o.index + 1) + " '" + o.name + "': " + o.reason;
  }
  return s;
}

namespace {

bool shapes_fully_known(const Session& session) {
  return std::all_of(session.inputs().begin(), session.inputs().end(), [](const IoInfo& io) {
    return io.has_shape && std::all_of(io.shape.begin(), io.shape.end(), [](const Dim& d) { return d.value >= 0; });
  });
}

// Loads the rule's model and prepares its sessions; throws what went wrong.
PreparedVariant prepare(const BundleFile& bundle, const PolicyRule& rule, size_t rule_index, int threads,
                        const VariantOptions& options) {
  const int model_index = bundle.manifest().find_model(rule.model);
  PreparedVariant v;
  v.rule_index = rule_index;
  v.model_id = rule.model;
  v.target = rule.target;
  v.threads = threads;
  v.model = load_bundle_model(bundle, static_cast<size_t>(model_index), options.key);
  SessionOptions so = options.session;
  so.threads = threads;
  const int count = std::max(1, options.sessions);
  for (int i = 0; i < count; ++i) {
    auto session = std::make_unique<Session>(v.model, so);
    // Preparing now (shapes, kernels, packed weights, the arena) keeps that work out of the
    // first request; models with symbolic input shapes prepare on their first run instead.
    if (shapes_fully_known(*session)) session->prepare();
    v.sessions.push_back(std::move(session));
  }
  return v;
}

}  // namespace

VariantSelection select_variant(const BundleFile& bundle, const DeviceInfo& device, const VariantOptions& options) {
  VariantSelection sel;
  const auto& policy = bundle.manifest().policy;
  for (size_t i = 0; i < policy.size(); ++i) {
    RuleOutcome o;
    o.index = i;
    o.name = policy[i].name;
    sel.outcomes.push_back(o);
  }
  for (size_t i = 0; i < policy.size(); ++i) {
    const PolicyRule& rule = policy[i];
    RuleOutcome& o = sel.outcomes[i];
    o.status = RuleOutcome::Status::kSkipped;
    if (!rule.when.matches(device, &o.reason)) continue;
    if (!bundle_target_available(rule.target)) {
      o.reason = "target '" + rule.target + "' is not available in this runtime (available: cpu)";
      continue;
    }
    const int threads = rule.threads.resolve(device.logical_cores);
    VariantOptions opts = options;
    if (opts.sessions <= 0) opts.sessions = std::max(1, device.logical_cores / threads);
    try {
      sel.chosen = prepare(bundle, rule, i, threads, opts);
    } catch (const std::exception& e) {  // xnn::Error, and e.g. bad_alloc for a model too big here
      o.reason = std::string("model '") + rule.model + "' failed to load: " + e.what();
      continue;
    }
    o.status = RuleOutcome::Status::kChosen;
    break;
  }
  return sel;
}

}  // namespace xnn
