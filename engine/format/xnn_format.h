// The .xnn model file: a small fixed header, a FlatBuffers description of the model
// (engine/format/xnn.fbs, which documents the layout and the versioning rules), then the
// weight blobs, each 64-byte aligned, so a loaded model uses the file mmap'ed with zero copies.
// Loading verifies the FlatBuffer (flatbuffers::Verifier) and then our semantic rules (indices
// in range, blob ranges inside the file, sizes matching shapes and dtypes, graph well-formed)
// before anything is used; any problem is an xnn::Error naming the file and the element.
#pragma once
#include <map>
#include <string>

#include "engine/core/graph.h"

namespace xnn {

constexpr uint32_t kXnnFormatVersion = 1;

struct XnnSaveOptions {
  // Free-form creation options recorded in the metadata (e.g. "opt_level": "2"); they are
  // merged into model.metadata.options, overriding equal keys.
  std::map<std::string, std::string> extra_options;
};

// Writes PATH.tmp and renames it to `path`, so readers see the old file or the whole new one.
// Refuses (xnn::Error) a model that load_xnn would refuse, e.g. one failing Graph::validate.
void save_xnn(const Model& model, const std::string& path, const XnnSaveOptions& options = {});
// Serialises to bytes (what save_xnn writes).
std::string serialize_xnn(const Model& model, const XnnSaveOptions& options = {});
// mmap's `path` read-only; constant tensors (values and tensor attributes) are views into the
// mapping, kept alive by the tensors. They are READ-ONLY: writing through raw()/data() faults;
// clone() a tensor before modifying it. The file must not be truncated while it is mapped.
Model load_xnn(const std::string& path);
// From memory (copies into an aligned buffer first; the tensors view that copy and are
// writable); `name` is used in error messages.
Model load_xnn_bytes(const void* data, size_t size, const std::string& name);
// True when the first bytes carry the .xnn magic.
bool has_xnn_magic(const void* data, size_t size);

}  // namespace xnn
