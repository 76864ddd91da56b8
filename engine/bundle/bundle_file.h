// The model bundle file (.xnnb): one file holding a JSON manifest (engine/bundle/bundle_manifest.h)
// and the model files as blobs.
//
// Layout (integers little-endian):
//
//   offset size  field
//   0      4     magic "XNNB"
//   4      4     container version (1)
//   8      8     manifest_size: bytes of the manifest JSON (UTF-8) at offset 64
//   16     8     blobs_offset: where the blob section starts (64-aligned, after the manifest)
//   24     8     blobs_size: bytes of the blob section; the file ends right there
//   32     32    SHA-256 of the manifest bytes
//   64           manifest JSON, zero padding up to blobs_offset, then the blobs: each model at
//                blobs_offset + model.offset (64-aligned), zero padding between them
//
// Every byte is checked when a bundle is opened: the header fields against the file size
// (truncation, appended bytes), the manifest against its SHA-256 and then strictly parsed, every
// blob range against the blob section (in range, aligned, not overlapping), the padding to be
// zero, and every blob against the SHA-256 in the manifest. A manifest or header problem refuses
// the whole bundle; a blob whose hash does not match only makes that model unusable (the policy
// falls back to the next rule, engine/bundle/bundle_variant.h).
//
// The hashes detect corruption (a broken download, a flipped bit), not a malicious edit: whoever
// can rewrite the file can rewrite the hashes too. Confidentiality and authenticity of the
// weights come from protected models (AES-256-GCM, engine/format/xnn_protect.h), whose key is
// given when the bundle is opened and is never stored in it.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/bundle/bundle_manifest.h"
#include "engine/format/file_io.h"

namespace xnn {

constexpr uint32_t kBundleContainerVersion = 1;
constexpr size_t kBundleHeaderSize = 64;
constexpr size_t kBundleBlobAlignment = 64;

// A model to put in a bundle: the BundleModel's id and file_name, and the file's bytes.
struct BundleModelInput {
  std::string id;
  std::string file_name;
  std::string bytes;
};

// Builds the bundle bytes. The manifest's `models` are replaced by entries made from `models`
// (format and protected detected from the bytes, offsets, sizes and hashes computed); its other
// fields are kept. The result is validated (validate_manifest) before anything is returned.
std::string serialize_bundle(BundleManifest manifest, const std::vector<BundleModelInput>& models);
// serialize_bundle, written to PATH.tmp and renamed into place (engine/format/file_io.h), so a
// process watching `path` sees the old bundle or the whole new one, never a partial file.
void write_bundle(const std::string& path, const BundleManifest& manifest, const std::vector<BundleModelInput>& models);

// An opened and checked bundle. Holds a read-only mapping of the file while it lives.
class BundleFile {
 public:
  // Maps and checks `path` (see above); xnn::Error naming the file and the problem.
  static BundleFile open(const std::string& path);

  const std::string& path() const { return path_; }
  const BundleManifest& manifest() const { return manifest_; }
  const std::string& manifest_json() const { return manifest_json_; }
  const std::string& manifest_sha256() const { return manifest_sha256_; }
  uint64_t file_size() const { return map_.size; }
  // The bytes of models[i] (a view into the mapping; valid while this object lives).
  std::string_view blob(size_t i) const;
  // "" when models[i]'s bytes match its sha256, else why not.
  const std::string& blob_problem(size_t i) const { return blob_problems_.at(i); }

 private:
  BundleFile() = default;
  std::string path_;
  file_io::MappedFile map_;
  uint64_t blobs_offset_ = 0;
  BundleManifest manifest_;
  std::string manifest_json_;
  std::string manifest_sha256_;
  std::vector<std::string> blob_problems_;
};

}  // namespace xnn
