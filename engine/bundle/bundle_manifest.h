// The manifest of a model bundle (.xnnb, engine/bundle/bundle_file.h): what the bundle is
// (name, monotonic version, label, creation time), the models it carries (content hashes, sizes,
// protected or not) and the runtime policy that picks one of them for the device it runs on.
//
// Stored in the bundle as JSON:
//   {"format_version": 1, "name": "keyword-spotter", "version": 7, "label": "2024-06 retrain",
//    "created_at": "2024-06-01T12:00:00Z",
//    "models": [{"id": "fp32", "file": "kws_fp32.xnn", "format": "xnn", "protected": true,
//                "offset": 0, "size": 40960, "sha256": "<64 hex>"}, ...],
//    "policy": [{"name": "big cores", "when": {"isa": "avx2", "min_cores": 4, "min_memory_mib": 2048,
//                                              "device_class": "flagship"},
//                "model": "fp32", "threads": "half", "target": "cpu"}, ...]}
// Every key is required except the optional ones of "when" and a rule's "name"; unknown keys
// are refused (a newer manifest bumps format_version instead).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/bundle/device_info.h"
#include "engine/core/json.h"

namespace xnn {

constexpr int64_t kBundleManifestVersion = 1;

struct BundleModel {
  std::string id;         // what policy rules refer to: [A-Za-z0-9_.-]+, unique
  std::string file_name;  // the file it was made from (informational)
  std::string format;     // "xnn" (also protected .xnn) or "onnx"
  bool is_protected = false;  // an AES-256-GCM container (engine/format/xnn_protect.h): needs the key
  uint64_t offset = 0;    // in the bundle's blob section
  uint64_t size = 0;
  std::string sha256;     // of the blob bytes, 64 lowercase hex digits
};

// The device class of a rule: a predicate over DeviceInfo; unset fields match any device.
struct DevicePredicate {
  std::optional<BundleIsa> isa;  // the device must support it
  int min_cores = 0;
  int64_t min_memory_mib = 0;
  std::string device_class;      // must equal the class the host app gave

  bool matches(const DeviceInfo& device, std::string* why_not = nullptr) const;
  std::string describe() const;  // "isa avx2, >= 4 cores" or "any device"
};

// Threads of the session: a fixed count, every logical core, or half of them (at least 1).
struct ThreadsSpec {
  enum class Kind { kCount, kAll, kHalf };
  Kind kind = Kind::kCount;
  int count = 1;  // kCount only

  int resolve(int logical_cores) const;
  std::string str() const;  // "4", "all", "half"
};

struct PolicyRule {
  std::string name;  // for reports; "rule N" (1-based) when the manifest gives none
  DevicePredicate when;
  std::string model;  // a BundleModel id
  ThreadsSpec threads;
  // Where it runs. Only "cpu" exists in this runtime; other kinds ("gpu", "npu", ...) are valid
  // in a manifest and skipped as unavailable, so bundles can carry rules for newer runtimes.
  std::string target = "cpu";
};

struct BundleManifest {
  int64_t format_version = kBundleManifestVersion;
  std::string name;
  int64_t version = 0;  // monotonic, >= 1: updates must increase it (downgrade protection)
  std::string label;    // free text ("2024-06 retrain")
  std::string created_at;
  std::vector<BundleModel> models;
  std::vector<PolicyRule> policy;  // ordered: the first usable rule wins

  // Index into models, or -1.
  int find_model(const std::string& id) const;
};

// Checks what the JSON cannot: non-empty name, version >= 1, ids well-formed and unique, sha256
// shape, every rule's model known, thread counts in 1..1024, targets non-empty lowercase words,
// at least one model and one rule. Errors start with `where`.
void validate_manifest(const BundleManifest& manifest, const std::string& where);

json::Value manifest_to_json(const BundleManifest& manifest);
// Strict: wrong types, unknown or missing keys and invalid values are an xnn::Error naming
// `where` and the key path ("policy[1].threads"). Also runs validate_manifest.
BundleManifest manifest_from_json(const json::Value& value, const std::string& where);

}  // namespace xnn
