// Picking the model variant of a bundle for one device: the policy rules are tried in order; a
// rule is skipped when its device class does not match this device, when its target is not
// available in this runtime (only "cpu" exists; "gpu", "npu", ... are for newer runtimes), or
// when its model cannot be made ready (content hash mismatch, protected without a key or with
// the wrong key, an op the engine cannot run, a session that fails to prepare). The first rule
// that survives all of that wins, and every earlier rule says why it was skipped.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/bundle/bundle_file.h"
#include "engine/bundle/device_info.h"
#include "engine/format/xnn_protect.h"
#include "engine/runtime/session.h"

namespace xnn {

// Whether this runtime can run on `target` ("cpu" only).
bool bundle_target_available(const std::string& target);

// Loads models[index] of an opened bundle: refuses a blob whose hash did not match
// (BundleFile::blob_problem), needs `key` for a protected model. Errors name the bundle and model.
std::shared_ptr<Model> load_bundle_model(const BundleFile& bundle, size_t index, const std::optional<ModelKey>& key);

struct RuleOutcome {
  enum class Status { kChosen, kSkipped, kNotTried };
  size_t index = 0;
  std::string name;
  Status status = Status::kNotTried;
  std::string reason;  // why it was skipped; empty otherwise
};
std::string_view rule_status_name(RuleOutcome::Status status);  // "chosen", "skipped", "not tried"

struct VariantOptions {
  std::optional<ModelKey> key;  // for protected models; never stored in the bundle
  // Sessions to prepare for the chosen variant (concurrent runs it can serve);
  // 0: max(1, logical cores / the rule's threads).
  int sessions = 0;
  SessionOptions session;  // threads is replaced by the rule's
};

// The chosen variant, ready to run: `sessions` prepared Sessions over one loaded model.
struct PreparedVariant {
  size_t rule_index = 0;
  std::string model_id;
  std::string target;
  int threads = 1;
  std::shared_ptr<const Model> model;
  std::vector<std::unique_ptr<Session>> sessions;
};

struct VariantSelection {
  std::vector<RuleOutcome> outcomes;      // one per policy rule, in order
  std::optional<PreparedVariant> chosen;  // empty when no rule could be used
  // "no rule of bundle PATH can run on this device (DEVICE): rule 1 'x': REASON; ..."
  std::string failure_summary(const BundleFile& bundle, const DeviceInfo& device) const;
};

// Tries the rules in order (see above). Never throws for a rule that cannot be used; the
// outcomes say why.
VariantSelection select_variant(const BundleFile& bundle, const DeviceInfo& device, const VariantOptions& options);

}  // namespace xnn
