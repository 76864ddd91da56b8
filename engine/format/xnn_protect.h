// Protected models: an .xnn file wrapped in AES-256-GCM (authenticated encryption, OpenSSL).
//
// File layout (all integers little-endian), the "XNNP" container:
//
//   offset size  field
//   0      4     magic "XNNP"
//   4      4     container version (1)
//   8      4     flags: 0 = weights only, 1 = whole model (graph encrypted too); other bits: error
//   12     4     reserved, zero
//   16     8     public_size: plaintext bytes that follow the header
//   24     8     cipher_size: encrypted bytes after those; the file ends right there
//   32     12    nonce: random (RAND_bytes), fresh for every protect
//   44     4     reserved, zero
//   48     16    GCM tag
//   64           public part (public_size bytes), then the ciphertext (cipher_size bytes)
//
// The plaintext being protected is a complete .xnn file (engine/format/xnn_format.h):
//  - weights only (flags 0): the public part is the .xnn head (its header, the FlatBuffer model
//    description and the padding up to the data section) and the ciphertext is the data section,
//    i.e. the bytes of every constant tensor. The graph (op types, attributes, shapes) stays
//    readable without the key (`xnn-lab inspect`), the weights do not.
//  - whole model (flags 1): the public part is empty and the ciphertext is the whole .xnn file.
// Header bytes 0..47 plus the public part are the GCM additional authenticated data, so the
// header, the readable graph and the ciphertext are all covered by the tag: a wrong key or any
// changed byte fails authentication (xnn::Error) before a single decrypted byte is used. The
// key (32 bytes) is never stored in the file. Decryption goes straight from the read-only
// mapping of the file into a 64-byte aligned engine Buffer (no temporary files); that buffer is
// cleansed when the last tensor viewing it is released.
//
// Threat model, honestly: this stops casual extraction of weights from an app package or a
// copied model file. It does not stop an attacker who runs the app under a debugger (the
// decrypted weights are in memory while a session lives) or who finds the key shipped with the
// app. Keep the key out of the model's folder.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/core/graph.h"

namespace xnn {

constexpr size_t kModelKeySize = 32;       // AES-256
constexpr size_t kProtectHeaderSize = 64;  // the XNNP header above
constexpr uint32_t kProtectVersion = 1;

// A 32-byte AES-256 key; wiped (OPENSSL_cleanse) when destroyed.
class ModelKey {
 public:
  ModelKey() = default;
  // Exactly kModelKeySize bytes, else xnn::Error.
  ModelKey(const void* bytes, size_t size);
  ModelKey(const ModelKey& other) = default;
  ModelKey& operator=(const ModelKey& other) = default;
  ~ModelKey();
  const uint8_t* data() const { return bytes_.data(); }
  static constexpr size_t size() { return kModelKeySize; }

 private:
  std::array<uint8_t, kModelKeySize> bytes_{};
};

// Reads a key file: exactly 32 raw bytes, or 64 hex characters optionally followed by a newline
// ("\n" or "\r\n"). Anything else is an xnn::Error naming the file and what was expected.
ModelKey read_key_file(const std::string& path);
// 32 bytes from RAND_bytes written raw to `path` with mode 0600. Refuses to overwrite an
// existing file (a replaced key makes every model protected with it unreadable).
ModelKey generate_key_file(const std::string& path);

enum class ProtectMode { kWeights, kWholeModel };

// Wraps the .xnn file bytes `xnn` (checked to be a loadable .xnn) in the XNNP container.
std::string protect_xnn_bytes(const std::string& xnn, const ModelKey& key, ProtectMode mode);
// serialize_xnn + protect_xnn_bytes, written to PATH.tmp and renamed; the plaintext exists only
// in memory (wiped after encryption).
void save_protected_xnn(const Model& model, const std::string& path, const ModelKey& key, ProtectMode mode);

// True when the first bytes carry the "XNNP" magic.
bool has_protected_magic(const void* data, size_t size);

// What the header of a protected file says (checked against the file size).
struct ProtectedInfo {
  ProtectMode mode = ProtectMode::kWeights;
  uint64_t public_size = 0;
  uint64_t cipher_size = 0;
};
ProtectedInfo read_protected_info(const std::string& path);

// Authenticates and decrypts `path` (mmap'ed read-only) into an aligned Buffer and decodes the
// .xnn inside; the model's constants view that buffer. Wrong key or modified file:
// "PATH: authentication failed: wrong key or the file was modified".
Model load_protected_xnn(const std::string& path, const ModelKey& key);
Model load_protected_xnn_bytes(const void* data, size_t size, const ModelKey& key, const std::string& name);

// The graph of a weights-only protected file WITHOUT the key, for inspection: op types,
// attributes, shapes and dtypes are real; every constant tensor holds ZEROS in place of its
// encrypted bytes, so the result must not be run. The readable part is NOT authenticated
// without the key. Whole-model files throw (their graph is encrypted too).
Model load_protected_structure(const std::string& path);

}  // namespace xnn
