// TEMPORARY stub, replaced by the format implementation.
#include "engine/format/xnn_format.h"
namespace xnn {
void save_xnn(const Model&, const std::string& p, const XnnSaveOptions&) { throw Error(p + ": .xnn writer not built yet"); }
std::string serialize_xnn(const Model&, const XnnSaveOptions&) { throw Error(".xnn writer not built yet"); }
Model load_xnn(const std::string& p) { throw Error(p + ": .xnn reader not built yet"); }
Model load_xnn_bytes(const void*, size_t, const std::string& p) { throw Error(p + ": .xnn reader not built yet"); }
bool has_xnn_magic(const void* d, size_t n) { return n >= 4 && std::memcmp(d, "XNN\x01", 4) == 0; }
}  // namespace xnn
