#include "engine/runtime/npy.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

namespace xnn {
namespace {

const char* descr_for(DType t) {
  switch (t) {
    case DType::kF32: return "<f4";
    case DType::kF16: return "<f2";
    case DType::kF64: return "<f8";
    case DType::kI8: return "|i1";
    case DType::kU8: return "|u1";
    case DType::kI32: return "<i4";
    case DType::kI64: return "<i8";
    case DType::kBool: return "|b1";
    default: return nullptr;
  }
}

DType dtype_for(std::string d) {
  if (d.size() == 3 && (d[0] == '=' || d[0] == '|')) d[0] = '<';
  for (DType t : {DType::kF32, DType::kF16, DType::kF64, DType::kI8, DType::kU8, DType::kI32, DType::kI64, DType::kBool}) {
    std::string want = descr_for(t);
    want[0] = '<';
    if (d == want) return t;
  }
  return DType::kUnknown;
}

// Extracts the value text following 'key': in a Python dict literal header.
std::string dict_value(const std::string& header, const std::string& key, const std::string& file) {
  const size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) throw Error(file + ": .npy header has no '" + key + "' entry");
  size_t p = header.find(':', k);
  if (p == std::string::npos) throw Error(file + ": malformed .npy header");
  ++p;
  while (p < header.size() && header[p] == ' ') ++p;
  if (p >= header.size()) throw Error(file + ": malformed .npy header");
  if (header[p] == '\'') {
    const size_t e = header.find('\'', p + 1);
    if (e == std::string::npos) throw Error(file + ": malformed .npy header");
    return header.substr(p + 1, e - p - 1);
  }
  if (header[p] == '(') {
    const size_t e = header.find(')', p);
    if (e == std::string::npos) throw Error(file + ": malformed .npy header");
    return header.substr(p + 1, e - p - 1);
  }
  size_t e = p;
  while (e < header.size() && header[e] != ',' && header[e] != '}') ++e;
  return header.substr(p, e - p);
}

}  // namespace

Tensor parse_npy(const void* data, size_t size, const std::string& file) {
  const auto* b = static_cast<const unsigned char*>(data);
  if (size < 10 || std::memcmp(b, "\x93NUMPY", 6) != 0) throw Error(file + ": not a .npy file (bad magic)");
  const int major = b[6];
  size_t header_len, header_start;
  if (major == 1) {
    header_len = static_cast<size_t>(b[8]) | (static_cast<size_t>(b[9]) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) throw Error(file + ": truncated .npy header");
    header_len = static_cast<size_t>(b[8]) | (static_cast<size_t>(b[9]) << 8) | (static_cast<size_t>(b[10]) << 16) |
                 (static_cast<size_t>(b[11]) << 24);
    header_start = 12;
  } else {
    throw Error(file + ": unsupported .npy format version " + std::to_string(major));
  }
  if (header_start + header_len > size) throw Error(file + ": truncated .npy header");
  const std::string header(reinterpret_cast<const char*>(b + header_start), header_len);
  const std::string descr = dict_value(header, "descr", file);
  const std::string fortran = dict_value(header, "fortran_order", file);
  const std::string shape_text = dict_value(header, "shape", file);
  if (fortran.find("True") != std::string::npos) throw Error(file + ": Fortran-order arrays are not supported");
  const DType dt = dtype_for(descr);
  if (dt == DType::kUnknown) throw Error(file + ": unsupported .npy dtype '" + descr + "' (expected f2/f4/f8/i1/u1/i4/i8/b1)");
  Shape shape;
  size_t p = 0;
  while (p < shape_text.size()) {
    while (p < shape_text.size() && (shape_text[p] == ' ' || shape_text[p] == ',')) ++p;
    if (p >= shape_text.size()) break;
    size_t e = p;
    while (e < shape_text.size() && shape_text[e] >= '0' && shape_text[e] <= '9') ++e;
    if (e == p) throw Error(file + ": malformed shape '(" + shape_text + ")' in .npy header");
    if (e - p > 15) throw Error(file + ": dimension too large in .npy header");
    shape.push_back(std::stoll(shape_text.substr(p, e - p)));
    p = e;
    while (p < shape_text.size() && shape_text[p] == 'L') ++p;
  }
  // Guard against overflow before allocating.
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d != 0 && n > (int64_t{1} << 40) / d) throw Error(file + ": .npy array too large");
    n *= d;
  }
  const size_t need = static_cast<size_t>(n) * dtype_size(dt);
  const size_t data_start = header_start + header_len;
  if (size - data_start < need) {
    throw Error(file + ": truncated .npy data: " + std::to_string(size - data_start) + " bytes for shape " +
                shape_str(shape) + " of " + std::string(dtype_name(dt)) + ", expected " + std::to_string(need));
  }
  Tensor t(dt, shape);
  if (need) std::memcpy(t.raw(), b + data_start, need);
  if (dt == DType::kBool) {
    for (int64_t i = 0; i < n; ++i) {
      auto* p8 = static_cast<uint8_t*>(t.raw());
      p8[i] = p8[i] ? 1 : 0;
    }
  }
  return t;
}

Tensor read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot open .npy file");
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return parse_npy(bytes.data(), bytes.size(), path);
}

void write_npy(const std::string& path, const Tensor& t) {
  const char* descr = descr_for(t.dtype());
  if (!descr) throw Error(path + ": cannot write dtype " + std::string(dtype_name(t.dtype())) + " to .npy");
  std::string shape = "(";
  for (size_t i = 0; i < t.shape().size(); ++i) shape += std::to_string(t.shape()[i]) + (t.shape().size() == 1 ? "," : (i + 1 < t.shape().size() ? ", " : ""));
  shape += ")";
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad so the data starts on a 64-byte boundary, as numpy does.
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot create .npy file");
  f.write("\x93NUMPY\x01\x00", 8);
  const uint16_t len = static_cast<uint16_t>(header.size());
  const char le[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  f.write(le, 2);
  f.write(header.data(), static_cast<std::streamsize>(header.size()));
  f.write(static_cast<const char*>(t.raw()), static_cast<std::streamsize>(t.nbytes()));
  if (!f) throw Error(path + ": write failed");
}

}  // namespace xnn
