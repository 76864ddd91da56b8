// Sizes of general-purpose compressors on a byte stream, the baseline the entropy coders are
// compared with in the encode report: zstd at level 19 (libzstd) and xz at preset 9 (liblzma,
// .xz container with CRC64), both the same as the `zstd -19` / `xz -9` tools produce.
#pragma once
#include <cstddef>
#include <string>

namespace xnn::encode {

size_t zstd_compressed_size(const std::string& bytes, int level = 19);
size_t xz_compressed_size(const std::string& bytes, int preset = 9);

}  // namespace xnn::encode
