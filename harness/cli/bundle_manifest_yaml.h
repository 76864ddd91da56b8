// The YAML a bundle is made from (`xnn-lab bundle create MANIFEST.yaml -o app.xnnb`; documented
// in configs/bundles/README.md): the bundle's name and version, the model files by path
// (relative to the YAML file), and the policy rules. Checked strictly: an unknown or missing
// key, a wrong type, an unknown model id or an unreadable model file is an xnn::Error that
// starts with FILE:LINE:COL and names the key.
#pragma once
#include <string>
#include <vector>

#include "engine/bundle/bundle_file.h"
#include "engine/bundle/bundle_manifest.h"

namespace xnn::cli {

struct BundleSource {
  BundleManifest manifest;  // models are filled in by serialize_bundle from `models`
  std::vector<BundleModelInput> models;  // bytes read from the files
};

// `now_utc` is the created_at used when the YAML gives none ("2024-06-01T12:00:00Z").
BundleSource read_bundle_yaml(const std::string& path, const std::string& now_utc);

// The current time as "YYYY-MM-DDTHH:MM:SSZ".
std::string utc_timestamp_now();

}  // namespace xnn::cli
