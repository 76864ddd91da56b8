#include "engine/bundle/bundle_file.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "engine/core/error.h"
#include "engine/core/sha256.h"
#include "engine/format/xnn_format.h"
#include "engine/format/xnn_protect.h"

namespace xnn {
namespace {

constexpr char kMagic[4] = {'X', 'N', 'N', 'B'};

uint64_t align_up(uint64_t v) { return (v + kBundleBlobAlignment - 1) / kBundleBlobAlignment * kBundleBlobAlignment; }

std::string to_hex(const std::array<uint8_t, 32>& bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  for (uint8_t b : bytes) {
    s += kHex[b >> 4];
    s += kHex[b & 15];
  }
  return s;
}

bool all_zero(const uint8_t* p, size_t n) {
  return std::all_of(p, p + n, [](uint8_t b) { return b == 0; });
}

}  // namespace

std::string serialize_bundle(BundleManifest manifest, const std::vector<BundleModelInput>& models) {
  manifest.models.clear();
  uint64_t offset = 0;
  for (const BundleModelInput& in : models) {
    BundleModel m;
    m.id = in.id;
    m.file_name = in.file_name;
    m.is_protected = has_protected_magic(in.bytes.data(), in.bytes.size());
    m.format = (m.is_protected || has_xnn_magic(in.bytes.data(), in.bytes.size())) ? "xnn" : "onnx";
    m.offset = offset;
    m.size = in.bytes.size();
    m.sha256 = sha256_hex(in.bytes);
    offset = align_up(offset + m.size);
    manifest.models.push_back(std::move(m));
  }
  validate_manifest(manifest, "bundle '" + manifest.name + "'");
  const std::string json = json::dump(manifest_to_json(manifest), 1);
  const uint64_t blobs_offset = align_up(kBundleHeaderSize + json.size());
  const uint64_t blobs_size = models.empty() ? 0 : manifest.models.back().offset + manifest.models.back().size;

  std::string out(blobs_offset + blobs_size, '\0');
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  std::memcpy(p, kMagic, 4);
  file_io::put_le<uint32_t>(p + 4, kBundleContainerVersion);
  file_io::put_le<uint64_t>(p + 8, json.size());
  file_io::put_le<uint64_t>(p + 16, blobs_offset);
  file_io::put_le<uint64_t>(p + 24, blobs_size);
  Sha256 h;
  h.update(json);
  const auto digest = h.digest();
  std::memcpy(p + 32, digest.data(), digest.size());
  std::memcpy(p + kBundleHeaderSize, json.data(), json.size());
  for (size_t i = 0; i < models.size(); ++i) {
    std::memcpy(p + blobs_offset + manifest.models[i].offset, models[i].bytes.data(), models[i].bytes.size());
  }
  return out;
}

void write_bundle(const std::string& path, const BundleManifest& manifest, const std::vector<BundleModelInput>& models) {
  const std::string bytes = serialize_bundle(manifest, models);
  file_io::write_file_atomically(path, 0644, [&](int fd, const std::string& tmp) {
    file_io::write_all(fd, bytes.data(), bytes.size(), tmp);
  });
}

BundleFile BundleFile::open(const std::string& path) {
  BundleFile b;
  b.path_ = path;
  b.map_ = file_io::map_file_readonly(path, "a model bundle (.xnnb)");
  const uint8_t* p = b.map_.data;
  const uint64_t size = b.map_.size;
  const auto fail = [&](const std::string& what) { throw Error(path + ": " + what); };

  if (size < 4 || std::memcmp(p, kMagic, 4) != 0) fail("not a model bundle (no XNNB magic)");
  if (size < kBundleHeaderSize) {
    fail("truncated: " + std::to_string(size) + " bytes, shorter than the " + std::to_string(kBundleHeaderSize) +
         "-byte bundle header");
  }
  const auto container_version = file_io::get_le<uint32_t>(p + 4);
  if (container_version != kBundleContainerVersion) {
    fail("bundle container version " + std::to_string(container_version) + " is not supported (this runtime reads " +
         std::to_string(kBundleContainerVersion) + ")");
  }
  const auto manifest_size = file_io::get_le<uint64_t>(p + 8);
  b.blobs_offset_ = file_io::get_le<uint64_t>(p + 16);
  const auto blobs_size = file_io::get_le<uint64_t>(p + 24);
  // The layout first (overflow-safe), then the size it implies against the file's.
  if (manifest_size == 0 || b.blobs_offset_ % kBundleBlobAlignment != 0 || b.blobs_offset_ < kBundleHeaderSize ||
      manifest_size > b.blobs_offset_ - kBundleHeaderSize || blobs_size > UINT64_MAX - b.blobs_offset_) {
    fail("corrupt header: manifest size " + std::to_string(manifest_size) + " and blob section at " +
         std::to_string(b.blobs_offset_) + " (" + std::to_string(blobs_size) + " bytes) are inconsistent");
  }
  if (b.blobs_offset_ + blobs_size != size) {
    fail(std::string(b.blobs_offset_ + blobs_size > size ? "truncated" : "unexpected bytes at the end") +
         ": the header says " + std::to_string(b.blobs_offset_ + blobs_size) + " bytes, the file has " +
         std::to_string(size));
  }
  b.manifest_json_.assign(reinterpret_cast<const char*>(p + kBundleHeaderSize), manifest_size);
  Sha256 h;
  h.update(b.manifest_json_);
  const auto digest = h.digest();
  if (std::memcmp(digest.data(), p + 32, digest.size()) != 0) {
    fail("manifest is corrupt: its SHA-256 does not match the header");
  }
  b.manifest_sha256_ = to_hex(digest);
  const uint64_t manifest_end = kBundleHeaderSize + manifest_size;
  if (!all_zero(p + manifest_end, b.blobs_offset_ - manifest_end)) fail("corrupt: non-zero padding after the manifest");
  b.manifest_ = manifest_from_json(json::parse(b.manifest_json_, path + ": manifest"), path);

  // Blob ranges: inside the section, aligned, in order, not overlapping; the gaps are zero.
  uint64_t cursor = 0;
  std::vector<size_t> order(b.manifest_.models.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t x, size_t y) { return b.manifest_.models[x].offset < b.manifest_.models[y].offset; });
  for (size_t i : order) {
    const BundleModel& m = b.manifest_.models[i];
    if (m.offset % kBundleBlobAlignment != 0 || m.offset < cursor || m.offset > blobs_size ||
        m.size > blobs_size - m.offset) {
      fail("manifest: model '" + m.id + "' (offset " + std::to_string(m.offset) + ", " + std::to_string(m.size) +
           " bytes) does not fit the " + std::to_string(blobs_size) + "-byte blob section");
    }
    if (!all_zero(p + b.blobs_offset_ + cursor, m.offset - cursor)) fail("corrupt: non-zero padding between models");
    cursor = m.offset + m.size;
  }
  if (!all_zero(p + b.blobs_offset_ + cursor, blobs_size - cursor)) fail("corrupt: non-zero bytes after the last model");

  for (size_t i = 0; i < b.manifest_.models.size(); ++i) {
    const BundleModel& m = b.manifest_.models[i];
    const std::string_view bytes = b.blob(i);
    const std::string actual = sha256_hex(bytes);
    std::string problem;
    if (actual != m.sha256) {
      problem = "model '" + m.id + "': content hash mismatch (sha256 " + actual + ", manifest says " + m.sha256 + ")";
    } else if (m.is_protected != has_protected_magic(bytes.data(), bytes.size())) {
      problem = "model '" + m.id + "': the manifest says " + (m.is_protected ? "protected" : "not protected") +
                " but the bytes say otherwise";
    }
    b.blob_problems_.push_back(std::move(problem));
  }
  return b;
}

std::string_view BundleFile::blob(size_t i) const {
  const BundleModel& m = manifest_.models.at(i);
  return {reinterpret_cast<const char*>(map_.data + blobs_offset_ + m.offset), m.size};
}

}  // namespace xnn
