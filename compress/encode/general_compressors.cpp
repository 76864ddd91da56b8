#include "compress/encode/general_compressors.h"

#include <lzma.h>
#include <zstd.h>

#include <vector>

#include "engine/core/error.h"

namespace xnn::encode {

size_t zstd_compressed_size(const std::string& bytes, int level) {
  std::vector<char> out(ZSTD_compressBound(bytes.size()));
  const size_t n = ZSTD_compress(out.data(), out.size(), bytes.data(), bytes.size(), level);
  if (ZSTD_isError(n)) throw Error(std::string("zstd compression failed: ") + ZSTD_getErrorName(n));
  return n;
}

size_t xz_compressed_size(const std::string& bytes, int preset) {
  std::vector<uint8_t> out(lzma_stream_buffer_bound(bytes.size()));
  size_t used = 0;
  const lzma_ret r = lzma_easy_buffer_encode(static_cast<uint32_t>(preset), LZMA_CHECK_CRC64, nullptr,
                                             reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), out.data(),
                                             &used, out.size());
  if (r != LZMA_OK) throw Error("xz compression failed (liblzma error " + std::to_string(static_cast<int>(r)) + ")");
  return used;
}

}  // namespace xnn::encode
