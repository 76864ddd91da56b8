#include "harness/data/fashion_mnist.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "engine/core/error.h"

namespace xnn::data {
namespace {

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08x", v);
  return buf;
}

uint32_t be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot open file");
  f.seekg(0, std::ios::end);
  const std::streamoff size = f.tellg();
  if (size < 0) throw Error(path + ": cannot read file");
  f.seekg(0, std::ios::beg);
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  if (size > 0 && !f.read(reinterpret_cast<char*>(bytes.data()), size)) throw Error(path + ": read failed");
  return bytes;
}

// Inflates gzip data (one or more concatenated members).
std::vector<uint8_t> gunzip(const std::string& path, const std::vector<uint8_t>& in) {
  std::vector<uint8_t> out;
  // The trailer holds the uncompressed size mod 2^32 of the last member: a good first guess.
  if (in.size() >= 18) {
    const uint8_t* t = in.data() + in.size() - 4;
    out.reserve(size_t{t[0]} | (size_t{t[1]} << 8) | (size_t{t[2]} << 16) | (size_t{t[3]} << 24));
  }
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) throw Error(path + ": cannot initialise zlib");
  zs.next_in = const_cast<Bytef*>(in.data());
  size_t consumed = 0;
  uint8_t chunk[1 << 16];
  while (true) {
    // avail_in is a uInt: feed large inputs in pieces.
    const size_t remaining = in.size() - consumed;
    zs.next_in = const_cast<Bytef*>(in.data() + consumed);
    zs.avail_in = static_cast<uInt>(std::min<size_t>(remaining, std::numeric_limits<uInt>::max()));
    const uInt fed = zs.avail_in;
    zs.next_out = chunk;
    zs.avail_out = sizeof(chunk);
    const int rc = inflate(&zs, Z_NO_FLUSH);
    out.insert(out.end(), chunk, chunk + (sizeof(chunk) - zs.avail_out));
    consumed += fed - zs.avail_in;
    if (rc == Z_STREAM_END) {
      // Another gzip member may follow (skip zero padding some tools add).
      while (consumed < in.size() && in[consumed] == 0) ++consumed;
      if (consumed >= in.size()) break;
      if (inflateReset(&zs) != Z_OK) {
        inflateEnd(&zs);
        throw Error(path + ": zlib reset failed");
      }
      continue;
    }
    if (rc == Z_BUF_ERROR && consumed >= in.size()) {
      inflateEnd(&zs);
      throw Error(path + ": truncated gzip data (the compressed stream ends early; expected a complete .gz file)");
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      const std::string msg = zs.msg ? zs.msg : "error " + std::to_string(rc);
      inflateEnd(&zs);
      throw Error(path + ": corrupt gzip data (" + msg + ")");
    }
    if (rc == Z_OK && consumed >= in.size() && zs.avail_out != 0) {
      inflateEnd(&zs);
      throw Error(path + ": truncated gzip data (the compressed stream ends early; expected a complete .gz file)");
    }
  }
  inflateEnd(&zs);
  return out;
}

std::string idx_kind(uint32_t magic) {
  if (magic == 0x00000803) return "IDX u8 images [count, rows, cols]";
  if (magic == 0x00000801) return "IDX u8 labels [count]";
  return "IDX";
}

// "DIR/NAME.gz" if present, else "DIR/NAME"; throws naming both if neither exists.
std::string find_file(const std::string& dir, const std::string& name) {
  namespace fs = std::filesystem;
  const fs::path gz = fs::path(dir) / (name + ".gz");
  const fs::path plain = fs::path(dir) / name;
  std::error_code ec;
  if (fs::is_regular_file(gz, ec)) return gz.string();
  if (fs::is_regular_file(plain, ec)) return plain.string();
  throw Error("fashion-mnist: neither " + gz.string() + " nor " + plain.string() +
              " exists (expected the Fashion-MNIST IDX files in " + dir + "; use --data-dir to point elsewhere)");
}

}  // namespace

std::vector<uint8_t> read_maybe_gzip(const std::string& path) {
  std::vector<uint8_t> bytes = read_file(path);
  if (bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b) return gunzip(path, bytes);
  return bytes;
}

IdxFile read_idx(const std::string& path, uint32_t expected_magic) {
  const std::vector<uint8_t> bytes = read_maybe_gzip(path);
  const std::string kind = idx_kind(expected_magic);
  if (bytes.size() < 4) {
    throw Error(path + ": truncated: " + std::to_string(bytes.size()) + " bytes, expected at least a 4-byte " + kind +
                " header (magic " + hex32(expected_magic) + ")");
  }
  const uint32_t magic = be32(bytes.data());
  if (magic != expected_magic) {
    throw Error(path + ": magic number " + hex32(magic) + ", expected " + hex32(expected_magic) + " (" + kind + ")");
  }
  const size_t ndim = expected_magic & 0xff;
  const size_t header = 4 + 4 * ndim;
  if (bytes.size() < header) {
    throw Error(path + ": truncated header: " + std::to_string(bytes.size()) + " bytes, expected " +
                std::to_string(header) + " (" + kind + ")");
  }
  IdxFile idx;
  const size_t body = bytes.size() - header;
  size_t expected = 1;
  std::string dims_text;
  for (size_t i = 0; i < ndim; ++i) {
    const uint32_t d = be32(bytes.data() + 4 + 4 * i);
    idx.dims.push_back(d);
    dims_text += (i ? " x " : "") + std::to_string(d);
    // Saturate instead of overflowing: a size beyond the file is reported as truncation.
    if (d != 0 && expected > std::numeric_limits<size_t>::max() / d) {
      expected = std::numeric_limits<size_t>::max();
    } else {
      expected *= d;
    }
  }
  if (body < expected) {
    throw Error(path + ": truncated: " + std::to_string(body) + " bytes of data after the header, expected " +
                (expected == std::numeric_limits<size_t>::max() ? std::string("more") : std::to_string(expected)) +
                " (" + dims_text + ")");
  }
  if (body > expected) {
    throw Error(path + ": " + std::to_string(body - expected) + " unexpected bytes after the data; expected exactly " +
                std::to_string(expected) + " bytes (" + dims_text + ")");
  }
  idx.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(header), bytes.end());
  return idx;
}

Dataset load_fashion_mnist(const std::string& dir, const std::string& split, int64_t limit) {
  std::string prefix;
  if (split == "train") {
    prefix = "train";
  } else if (split == "test" || split == "t10k") {
    prefix = "t10k";
  } else {
    throw Error("fashion-mnist: unknown split '" + split + "', expected 'train' or 'test'");
  }
  if (limit < 0) throw Error("fashion-mnist: limit " + std::to_string(limit) + " is negative; expected >= 0 (0 = all)");
  const std::string images_path = find_file(dir, prefix + "-images-idx3-ubyte");
  const std::string labels_path = find_file(dir, prefix + "-labels-idx1-ubyte");
  IdxFile images = read_idx(images_path, 0x00000803);
  IdxFile labels = read_idx(labels_path, 0x00000801);
  if (images.dims[1] == 0 || images.dims[2] == 0) {
    throw Error(images_path + ": image size " + std::to_string(images.dims[1]) + " x " +
                std::to_string(images.dims[2]) + ", expected non-empty images");
  }
  if (images.dims[0] != labels.dims[0]) {
    throw Error(labels_path + ": " + std::to_string(labels.dims[0]) + " labels, expected " +
                std::to_string(images.dims[0]) + " (one per image in " + images_path + ")");
  }
  Dataset ds;
  ds.count = images.dims[0];
  ds.rows = images.dims[1];
  ds.cols = images.dims[2];
  for (int64_t i = 0; i < ds.count; ++i) {
    if (labels.data[static_cast<size_t>(i)] >= ds.num_classes) {
      throw Error(labels_path + ": label " + std::to_string(labels.data[static_cast<size_t>(i)]) + " at index " +
                  std::to_string(i) + ", expected 0.." + std::to_string(ds.num_classes - 1));
    }
  }
  if (limit > 0 && limit < ds.count) ds.count = limit;
  images.data.resize(static_cast<size_t>(ds.count * ds.rows * ds.cols));
  labels.data.resize(static_cast<size_t>(ds.count));
  ds.images = std::move(images.data);
  ds.labels = std::move(labels.data);
  return ds;
}

Tensor make_batch(const Dataset& ds, int64_t begin, int64_t count, const Preprocess& p,
                  const Shape& model_input_shape) {
  if (begin < 0 || count <= 0 || begin + count > ds.count) {
    throw Error("make_batch: samples [" + std::to_string(begin) + ", " + std::to_string(begin + count) +
                ") out of range; the dataset has " + std::to_string(ds.count));
  }
  if (p.mean.empty() || p.std.empty()) throw Error("preprocessing: mean and std need at least one value");
  if (p.mean.size() > 1 || p.std.size() > 1) {
    throw Error("preprocessing: " + std::to_string(p.mean.size()) + " mean and " + std::to_string(p.std.size()) +
                " std values given, expected one each (the images have 1 channel)");
  }
  const float mean = p.mean[0], stdv = p.std[0];
  if (!(stdv != 0.0f) || !std::isfinite(stdv)) throw Error("preprocessing: std must be finite and non-zero");
  if (p.layout != "NCHW" && p.layout != "NHWC") {
    throw Error("preprocessing: layout '" + p.layout + "', expected NCHW or NHWC");
  }

  const int64_t R = ds.rows, C = ds.cols, pixels = R * C;
  const Shape& s = model_input_shape;
  auto fits = [](int64_t dim, int64_t want) { return dim < 0 || dim == want; };
  const std::string img = std::to_string(R) + "x" + std::to_string(C);
  auto cannot = [&](const std::string& why) {
    return Error("model input " + shape_str(s) + " cannot take a " + img + " grey image: " + why);
  };

  Shape out_shape;
  switch (s.size()) {
    case 4: {
      const bool nchw = fits(s[1], 1) && fits(s[2], R) && fits(s[3], C);
      const bool nhwc = fits(s[1], R) && fits(s[2], C) && fits(s[3], 1);
      if (!nchw && !nhwc) throw cannot("expected [N,1," + std::to_string(R) + "," + std::to_string(C) + "] (NCHW) or [N," +
                                       std::to_string(R) + "," + std::to_string(C) + ",1] (NHWC)");
      const bool use_nchw = nchw && nhwc ? p.layout == "NCHW" : nchw;
      out_shape = use_nchw ? Shape{count, 1, R, C} : Shape{count, R, C, 1};
      break;
    }
    case 3:
      if (!fits(s[1], R) || !fits(s[2], C)) throw cannot("expected [N," + std::to_string(R) + "," + std::to_string(C) + "]");
      out_shape = {count, R, C};
      break;
    case 2:
      if (!fits(s[1], pixels)) throw cannot("expected [N," + std::to_string(pixels) + "]");
      out_shape = {count, pixels};
      break;
    default:
      throw cannot("expected rank 2 [N," + std::to_string(pixels) + "], 3 [N,H,W] or 4 (NCHW/NHWC)");
  }

  // With one channel NCHW and NHWC have the same memory order: the image rows as stored.
  Tensor t(DType::kF32, out_shape);
  float* dst = t.data<float>();
  const uint8_t* src = ds.images.data() + static_cast<size_t>(begin * pixels);
  const int64_t n = count * pixels;
  for (int64_t i = 0; i < n; ++i) dst[i] = (static_cast<float>(src[i]) * p.scale - mean) / stdv;
  return t;
}

Dataset slice_dataset(const Dataset& ds, int64_t begin, int64_t count) {
  if (begin < 0 || count < 0 || begin + count > ds.count) {
    throw Error("slice_dataset: samples [" + std::to_string(begin) + ", " + std::to_string(begin + count) +
                ") are outside the dataset's " + std::to_string(ds.count));
  }
  Dataset out;
  out.count = count;
  out.rows = ds.rows;
  out.cols = ds.cols;
  out.num_classes = ds.num_classes;
  const int64_t px = ds.rows * ds.cols;
  out.images.assign(ds.images.begin() + begin * px, ds.images.begin() + (begin + count) * px);
  out.labels.assign(ds.labels.begin() + begin, ds.labels.begin() + begin + count);
  return out;
}

}  // namespace xnn::data
