// The .xnn model file: a small fixed header, a FlatBuffers description of the model
// (engine/format/xnn.fbs), then the weight blobs, each 64-byte aligned, so a loaded model uses
// the file mmap'ed with zero copies. Loading verifies the FlatBuffer (flatbuffers::Verifier)
// and then our semantic rules (indices in range, blob ranges inside the file, sizes matching
// shapes and dtypes, graph well-formed) before anything is used.
#pragma once
#include <string>

#include "engine/core/graph.h"

namespace xnn {

constexpr uint32_t kXnnFormatVersion = 1;

struct XnnSaveOptions {
  // Free-form creation options recorded in the metadata (e.g. "opt_level": "2").
  std::map<std::string, std::string> extra_options;
};

void save_xnn(const Model& model, const std::string& path, const XnnSaveOptions& options = {});
// Serialises to bytes (what save_xnn writes).
std::string serialize_xnn(const Model& model, const XnnSaveOptions& options = {});
// mmap's `path`; weight tensors are views into the mapping (kept alive by the tensors).
Model load_xnn(const std::string& path);
// From memory (copies into an aligned buffer first); `name` is used in error messages.
Model load_xnn_bytes(const void* data, size_t size, const std::string& name);
// True when the first bytes carry the .xnn magic.
bool has_xnn_magic(const void* data, size_t size);

}  // namespace xnn
