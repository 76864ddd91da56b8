// Protected models: the XNNP container around .xnn bytes, AES-256-GCM through OpenSSL's EVP
// interface. The layout and the threat model are documented in xnn_protect.h.
#include "engine/format/xnn_protect.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "engine/format/file_io.h"
#include "engine/format/xnn_format.h"
#include "engine/format/xnn_layout.h"

namespace xnn {

namespace {

constexpr char kProtectMagic[4] = {'X', 'N', 'N', 'P'};
constexpr size_t kNonceSize = 12;
constexpr size_t kTagSize = 16;
// Field positions in the 64-byte header.
constexpr size_t kVersionAt = 4;
constexpr size_t kFlagsAt = 8;
constexpr size_t kPublicSizeAt = 16;
constexpr size_t kCipherSizeAt = 24;
constexpr size_t kNonceAt = 32;
constexpr size_t kTagAt = 48;
// Bytes [0, kTagAt) of the header are authenticated (the tag itself cannot be).
constexpr size_t kAuthenticatedHeaderSize = kTagAt;
constexpr uint32_t kFlagWholeModel = 1;
// EVP_*Update take an int length.
constexpr size_t kChunk = size_t{1} << 30;

using file_io::errno_text;
using file_io::get_le;
using file_io::put_le;
using file_io::write_all;
using Fd = file_io::FileDescriptor;
using file_io::MappedFile;
MappedFile map_file(const std::string& path) { return file_io::map_file_readonly(path, "a protected model"); }

// 64-byte aligned engine Buffer whose bytes are wiped before they are freed (it holds
// decrypted weights).
std::shared_ptr<Buffer> allocate_secret_buffer(size_t bytes, const std::string& name) {
  const size_t rounded = (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
  const size_t alloc = rounded == 0 ? kTensorAlignment : rounded;
  void* p = std::aligned_alloc(kTensorAlignment, alloc);
  if (!p) throw Error(name + ": out of memory allocating " + std::to_string(bytes) + " bytes for the decrypted model");
  std::memset(p, 0, alloc);
  std::shared_ptr<void> owner(p, [alloc](void* q) {
    OPENSSL_cleanse(q, alloc);
    std::free(q);
  });
  return Buffer::wrap(p, bytes, std::move(owner));
}

struct CipherCtx {
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  CipherCtx() {
    if (!ctx) throw Error("OpenSSL: cannot create a cipher context");
  }
  ~CipherCtx() { EVP_CIPHER_CTX_free(ctx); }
  CipherCtx(const CipherCtx&) = delete;
  CipherCtx& operator=(const CipherCtx&) = delete;
};

// Feeds `size` bytes to an EVP update function in int-sized chunks; out == nullptr feeds AAD.
template <typename Update>
void update_chunks(Update update, EVP_CIPHER_CTX* ctx, uint8_t* out, const uint8_t* in, size_t size,
                   const char* what) {
  while (size > 0) {
    const size_t n = size < kChunk ? size : kChunk;
    int written = 0;
    if (update(ctx, out, &written, in, static_cast<int>(n)) != 1) throw Error(std::string("OpenSSL: ") + what + " failed");
    if (out) out += written;
    in += n;
    size -= n;
  }
}

struct ParsedHeader {
  ProtectedInfo info;
  const uint8_t* nonce = nullptr;
  const uint8_t* tag = nullptr;
};

ParsedHeader parse_header(const uint8_t* file, size_t size, const std::string& name) {
  const std::string pre = name + ": ";
  if (!has_protected_magic(file, size)) throw Error(pre + "not a protected model (missing the \"XNNP\" magic)");
  if (size < kProtectHeaderSize) {
    throw Error(pre + "file is " + std::to_string(size) + " bytes, shorter than the " +
                std::to_string(kProtectHeaderSize) + "-byte protected-model header (truncated?)");
  }
  const auto version = get_le<uint32_t>(file + kVersionAt);
  if (version == 0) throw Error(pre + "invalid protected-model version 0 (corrupted header)");
  if (version > kProtectVersion) {
    throw Error(pre + "protected-model version " + std::to_string(version) + " is newer than this build supports (" +
                std::to_string(kProtectVersion) + "); upgrade xnn-lab");
  }
  const auto flags = get_le<uint32_t>(file + kFlagsAt);
  if (flags & ~kFlagWholeModel) {
    throw Error(pre + "protected-model flags " + std::to_string(flags) +
                " name features this build does not know (expected 0 or 1)");
  }
  for (size_t i : {12, 13, 14, 15, 44, 45, 46, 47}) {
    if (file[i] != 0) throw Error(pre + "reserved header byte " + std::to_string(i) + " is not zero (corrupted header)");
  }
  ParsedHeader h;
  h.info.mode = (flags & kFlagWholeModel) ? ProtectMode::kWholeModel : ProtectMode::kWeights;
  h.info.public_size = get_le<uint64_t>(file + kPublicSizeAt);
  h.info.cipher_size = get_le<uint64_t>(file + kCipherSizeAt);
  const uint64_t body = size - kProtectHeaderSize;
  if (h.info.public_size > body || h.info.cipher_size != body - h.info.public_size) {
    throw Error(pre + "file is " + std::to_string(size) + " bytes but its header describes " +
                std::to_string(h.info.public_size) + " readable + " + std::to_string(h.info.cipher_size) +
                " encrypted bytes after the " + std::to_string(kProtectHeaderSize) +
                "-byte header (truncated or corrupted)");
  }
  if (h.info.mode == ProtectMode::kWholeModel && (h.info.public_size != 0 || h.info.cipher_size == 0)) {
    throw Error(pre + "whole-model protection with " + std::to_string(h.info.public_size) + " readable and " +
                std::to_string(h.info.cipher_size) + " encrypted bytes (expected 0 readable; corrupted header)");
  }
  if (h.info.mode == ProtectMode::kWeights && h.info.public_size < xnn_file::kHeaderSize) {
    throw Error(pre + "weights-only protection with a readable part of " + std::to_string(h.info.public_size) +
                " bytes, smaller than an .xnn header (corrupted header)");
  }
  h.nonce = file + kNonceAt;
  h.tag = file + kTagAt;
  return h;
}

Model decode_plaintext(const std::shared_ptr<Buffer>& storage, const ProtectedInfo& info, const std::string& name) {
  const xnn_file::Header inner =
      xnn_file::decode_header(static_cast<const uint8_t*>(storage->data()), storage->size(), name);
  if (info.mode == ProtectMode::kWeights && inner.data_offset != info.public_size) {
    throw Error(name + ": the readable part ends at " + std::to_string(info.public_size) +
                " but the model's data section starts at " + std::to_string(inner.data_offset) + " (corrupted)");
  }
  return xnn_file::decode_model(storage, name);
}

}  // namespace

ModelKey::ModelKey(const void* bytes, size_t size) {
  if (size != kModelKeySize || bytes == nullptr) {
    throw Error("model key is " + std::to_string(size) + " bytes; expected " + std::to_string(kModelKeySize) +
                " (AES-256)");
  }
  std::memcpy(bytes_.data(), bytes, kModelKeySize);
}

ModelKey::~ModelKey() { OPENSSL_cleanse(bytes_.data(), bytes_.size()); }

bool has_protected_magic(const void* data, size_t size) {
  return size >= sizeof(kProtectMagic) && std::memcmp(data, kProtectMagic, sizeof(kProtectMagic)) == 0;
}

ModelKey read_key_file(const std::string& path) {
  const std::string expected =
      "expected exactly 32 raw bytes or 64 hex characters (optionally followed by a newline); "
      "create one with `xnn-lab protect --generate-key FILE`";
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) throw Error(path + ": cannot open key file: " + errno_text());
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) throw Error(path + ": key file is not a regular file");
  if (st.st_size > 66) {
    throw Error(path + ": key file is " + std::to_string(st.st_size) + " bytes; " + expected);
  }
  uint8_t buf[80];
  size_t n = 0;
  while (n < sizeof(buf)) {
    const ssize_t r = ::read(fd.get(), buf + n, sizeof(buf) - n);
    if (r < 0) {
      if (errno == EINTR) continue;
      OPENSSL_cleanse(buf, sizeof(buf));
      throw Error(path + ": cannot read key file: " + errno_text());
    }
    if (r == 0) break;
    n += static_cast<size_t>(r);
  }
  struct Wipe {
    uint8_t* p;
    size_t n;
    ~Wipe() { OPENSSL_cleanse(p, n); }
  } wipe{buf, sizeof(buf)};
  if (n == kModelKeySize) return ModelKey(buf, n);
  size_t hex_len = n;
  if (hex_len > 0 && buf[hex_len - 1] == '\n') {
    --hex_len;
    if (hex_len > 0 && buf[hex_len - 1] == '\r') --hex_len;
  }
  if (hex_len != 2 * kModelKeySize) {
    throw Error(path + ": key file is " + std::to_string(n) + " bytes; " + expected);
  }
  uint8_t key[kModelKeySize];
  struct Wipe key_wipe{key, sizeof(key)};
  auto nibble = [&](uint8_t c, size_t at) -> uint8_t {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    throw Error(path + ": key file byte " + std::to_string(at) + " is not a hex digit; " + expected);
  };
  for (size_t i = 0; i < kModelKeySize; ++i) {
    key[i] = static_cast<uint8_t>(nibble(buf[2 * i], 2 * i) << 4 | nibble(buf[2 * i + 1], 2 * i + 1));
  }
  return ModelKey(key, sizeof(key));
}

ModelKey generate_key_file(const std::string& path) {
  uint8_t key[kModelKeySize];
  if (RAND_bytes(key, sizeof(key)) != 1) throw Error("OpenSSL: RAND_bytes failed to produce a key");
  ModelKey out(key, sizeof(key));
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (fd.get() < 0) {
    const int err = errno;
    OPENSSL_cleanse(key, sizeof(key));
    if (err == EEXIST) {
      throw Error(path + ": already exists; refusing to overwrite a key (models protected with it would become "
                         "unreadable)");
    }
    throw Error(path + ": cannot create key file: " + std::strerror(err));
  }
  try {
    if (::fchmod(fd.get(), 0600) != 0) throw Error(path + ": cannot set mode 0600: " + errno_text());
    write_all(fd.get(), key, sizeof(key), path);
    if (::fsync(fd.get()) != 0 || fd.close() != 0) throw Error(path + ": cannot write: " + errno_text());
  } catch (...) {
    OPENSSL_cleanse(key, sizeof(key));
    fd.close();
    ::unlink(path.c_str());
    throw;
  }
  OPENSSL_cleanse(key, sizeof(key));
  return out;
}

std::string protect_xnn_bytes(const std::string& xnn, const ModelKey& key, ProtectMode mode) {
  const auto* plain = reinterpret_cast<const uint8_t*>(xnn.data());
  const xnn_file::Header inner = xnn_file::decode_header(plain, xnn.size(), "protect: input model");
  const uint64_t public_size = mode == ProtectMode::kWeights ? inner.data_offset : 0;
  const uint64_t cipher_size = xnn.size() - public_size;

  std::string out(kProtectHeaderSize + xnn.size(), '\0');
  auto* head = reinterpret_cast<uint8_t*>(out.data());
  std::memcpy(head, kProtectMagic, sizeof(kProtectMagic));
  put_le<uint32_t>(head + kVersionAt, kProtectVersion);
  put_le<uint32_t>(head + kFlagsAt, mode == ProtectMode::kWholeModel ? kFlagWholeModel : 0);
  put_le<uint64_t>(head + kPublicSizeAt, public_size);
  put_le<uint64_t>(head + kCipherSizeAt, cipher_size);
  if (RAND_bytes(head + kNonceAt, kNonceSize) != 1) throw Error("OpenSSL: RAND_bytes failed to produce a nonce");
  std::memcpy(head + kProtectHeaderSize, plain, public_size);

  CipherCtx c;
  if (EVP_EncryptInit_ex(c.ctx, EVP_aes_256_gcm(), nullptr, nullptr, nullptr) != 1 ||
      EVP_CIPHER_CTX_ctrl(c.ctx, EVP_CTRL_GCM_SET_IVLEN, static_cast<int>(kNonceSize), nullptr) != 1 ||
      EVP_EncryptInit_ex(c.ctx, nullptr, nullptr, key.data(), head + kNonceAt) != 1) {
    throw Error("OpenSSL: cannot set up AES-256-GCM encryption");
  }
  update_chunks(EVP_EncryptUpdate, c.ctx, nullptr, head, kAuthenticatedHeaderSize, "authenticating the header");
  update_chunks(EVP_EncryptUpdate, c.ctx, nullptr, head + kProtectHeaderSize, public_size,
                "authenticating the readable part");
  uint8_t* cipher = head + kProtectHeaderSize + public_size;
  update_chunks(EVP_EncryptUpdate, c.ctx, cipher, plain + public_size, cipher_size, "encryption");
  int final_len = 0;
  if (EVP_EncryptFinal_ex(c.ctx, cipher + cipher_size, &final_len) != 1 || final_len != 0 ||
      EVP_CIPHER_CTX_ctrl(c.ctx, EVP_CTRL_GCM_GET_TAG, static_cast<int>(kTagSize), head + kTagAt) != 1) {
    throw Error("OpenSSL: AES-256-GCM encryption failed");
  }
  return out;
}

void save_protected_xnn(const Model& model, const std::string& path, const ModelKey& key, ProtectMode mode) {
  std::string plain = serialize_xnn(model);
  std::string file;
  try {
    file = protect_xnn_bytes(plain, key, mode);
  } catch (...) {
    OPENSSL_cleanse(plain.data(), plain.size());
    throw;
  }
  OPENSSL_cleanse(plain.data(), plain.size());
  file_io::write_file_atomically(path, 0644, [&](int fd, const std::string& tmp) {
    write_all(fd, file.data(), file.size(), tmp);
  });
}

ProtectedInfo read_protected_info(const std::string& path) {
  const MappedFile f = map_file(path);
  return parse_header(f.data, f.size, path).info;
}

Model load_protected_xnn_bytes(const void* data, size_t size, const ModelKey& key, const std::string& name) {
  if (data == nullptr || size == 0) throw Error(name + ": file is empty, not a protected model");
  const auto* file = static_cast<const uint8_t*>(data);
  const ParsedHeader h = parse_header(file, size, name);
  const uint64_t total = h.info.public_size + h.info.cipher_size;
  std::shared_ptr<Buffer> storage = allocate_secret_buffer(static_cast<size_t>(total), name);
  auto* out = static_cast<uint8_t*>(storage->data());
  const uint8_t* public_part = file + kProtectHeaderSize;
  std::memcpy(out, public_part, h.info.public_size);

  CipherCtx c;
  if (EVP_DecryptInit_ex(c.ctx, EVP_aes_256_gcm(), nullptr, nullptr, nullptr) != 1 ||
      EVP_CIPHER_CTX_ctrl(c.ctx, EVP_CTRL_GCM_SET_IVLEN, static_cast<int>(kNonceSize), nullptr) != 1 ||
      EVP_DecryptInit_ex(c.ctx, nullptr, nullptr, key.data(), h.nonce) != 1) {
    throw Error("OpenSSL: cannot set up AES-256-GCM decryption");
  }
  update_chunks(EVP_DecryptUpdate, c.ctx, nullptr, file, kAuthenticatedHeaderSize, "authenticating the header");
  update_chunks(EVP_DecryptUpdate, c.ctx, nullptr, public_part, h.info.public_size, "authenticating the readable part");
  update_chunks(EVP_DecryptUpdate, c.ctx, out + h.info.public_size, public_part + h.info.public_size,
                h.info.cipher_size, "decryption");
  uint8_t tag[kTagSize];
  std::memcpy(tag, h.tag, kTagSize);
  int final_len = 0;
  if (EVP_CIPHER_CTX_ctrl(c.ctx, EVP_CTRL_GCM_SET_TAG, static_cast<int>(kTagSize), tag) != 1 ||
      EVP_DecryptFinal_ex(c.ctx, out + total, &final_len) != 1) {
    // Nothing decrypted is used: the buffer is wiped when `storage` goes away right here.
    throw Error(name + ": authentication failed: wrong key or the file was modified");
  }
  return decode_plaintext(storage, h.info, name);
}

Model load_protected_xnn(const std::string& path, const ModelKey& key) {
  const MappedFile f = map_file(path);
  return load_protected_xnn_bytes(f.data, f.size, key, path);
}

Model load_protected_structure(const std::string& path) {
  const MappedFile f = map_file(path);
  const ParsedHeader h = parse_header(f.data, f.size, path);
  if (h.info.mode == ProtectMode::kWholeModel) {
    throw Error(path + " is protected with its graph encrypted (protect --encrypt-graph): pass --key-file to read it");
  }
  // Zeros stand in for the encrypted data section.
  std::shared_ptr<Buffer> storage = Buffer::allocate(static_cast<size_t>(h.info.public_size + h.info.cipher_size));
  std::memcpy(storage->data(), f.data + kProtectHeaderSize, h.info.public_size);
  return decode_plaintext(storage, h.info, path);
}

}  // namespace xnn
