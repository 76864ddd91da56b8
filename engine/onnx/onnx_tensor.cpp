// TensorProto -> Tensor. Every size comes from an untrusted file, so each is checked before
// anything is allocated or copied: dims non-negative, element counts free of overflow, data
// lengths equal to what the shape needs, external ranges inside their file.
#include "engine/onnx/onnx_tensor.h"

#include <onnx/onnx_pb.h>

#include <bit>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <system_error>

#include "engine/onnx/tensor_proto.h"

namespace xnn {
namespace {

static_assert(std::endian::native == std::endian::little,
              "ONNX raw_data is little endian; a big-endian host would need byte swapping here");

// Largest tensor accepted (bytes): beyond what any file or protobuf message can carry anyway,
// and small enough that element counts times element sizes cannot overflow.
constexpr uint64_t kMaxTensorBytes = uint64_t{1} << 40;

std::string tensor_desc(DType dtype, const Shape& shape) {
  return shape_str(shape) + " of " + std::string(dtype_name(dtype));
}

// Byte size of a tensor of `shape`, or an Error when a dim is negative or the size absurd.
uint64_t checked_nbytes(const Shape& shape, DType dtype, const std::string& what) {
  uint64_t bytes = dtype_size(dtype);
  bool too_large = false;
  for (int64_t d : shape) {
    if (d < 0) throw Error(what + ": negative dimension in shape " + shape_str(shape));
    if (d == 0) return 0;
    if (bytes > kMaxTensorBytes / static_cast<uint64_t>(d)) too_large = true;
    if (!too_large) bytes *= static_cast<uint64_t>(d);
  }
  if (too_large) throw Error(what + ": shape " + shape_str(shape) + " is too large (over 1 TiB of data)");
  return bytes;
}

// Parses a non-negative decimal integer (external data offset/length).
uint64_t parse_size_field(const std::string& text, const std::string& key, const std::string& what) {
  if (text.empty() || text.size() > 19) throw Error(what + ": external data '" + key + "' is not a valid size: '" + text + "'");
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') throw Error(what + ": external data '" + key + "' is not a valid size: '" + text + "'");
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

// A location must stay inside the model's folder: relative, and without '..' components.
std::filesystem::path resolve_external_location(const std::string& location, const std::string& base_dir,
                                                const std::string& what) {
  namespace fs = std::filesystem;
  if (location.empty()) throw Error(what + ": external data has no 'location'");
  if (location.find('\0') != std::string::npos) throw Error(what + ": external data location contains a NUL byte");
  const fs::path rel(location);
  if (rel.is_absolute() || rel.has_root_name() || rel.has_root_directory()) {
    throw Error(what + ": external data location '" + location +
                "' is an absolute path; it must be relative to the model's folder");
  }
  for (const fs::path& part : rel) {
    if (part == "..") {
      throw Error(what + ": external data location '" + location + "' leaves the model's folder ('..')");
    }
  }
  if (base_dir.empty()) {
    throw Error(what + ": uses external data ('" + location +
                "') but the model was given as bytes without a folder to resolve it in");
  }
  return fs::path(base_dir) / rel;
}

// Validates the external range against the file before allocating anything.
Tensor read_external_data(const onnx::TensorProto& proto, DType dtype, const Shape& shape, uint64_t nbytes,
                          const std::string& what, const std::string& base_dir) {
  std::string location;
  std::optional<uint64_t> offset, length;
  for (const auto& entry : proto.external_data()) {
    if (entry.key() == "location") location = entry.value();
    else if (entry.key() == "offset") offset = parse_size_field(entry.value(), "offset", what);
    else if (entry.key() == "length") length = parse_size_field(entry.value(), "length", what);
    // "checksum" (and anything newer) is informational.
  }
  const std::filesystem::path file = resolve_external_location(location, base_dir, what);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) {
    throw Error(what + ": external data file '" + file.string() + "' does not exist or is not a regular file");
  }
  const uint64_t file_size = std::filesystem::file_size(file, ec);
  if (ec) throw Error(what + ": cannot read the size of external data file '" + file.string() + "': " + ec.message());
  const uint64_t start = offset.value_or(0);
  if (start > file_size) {
    throw Error(what + ": external data offset " + std::to_string(start) + " is past the end of '" +
                file.string() + "' (" + std::to_string(file_size) + " bytes)");
  }
  const uint64_t available = file_size - start;
  const uint64_t span = length.value_or(available);
  if (span > available) {
    throw Error(what + ": external data range [" + std::to_string(start) + ", +" + std::to_string(span) +
                ") exceeds '" + file.string() + "' (" + std::to_string(file_size) + " bytes)");
  }
  if (span != nbytes) {
    throw Error(what + ": external data has " + std::to_string(span) + " bytes, expected " +
                std::to_string(nbytes) + " for " + tensor_desc(dtype, shape));
  }
  Tensor out(dtype, shape);
  std::ifstream f(file, std::ios::binary);
  f.seekg(static_cast<std::streamoff>(start));
  f.read(static_cast<char*>(out.raw()), static_cast<std::streamsize>(span));
  if (!f || static_cast<uint64_t>(f.gcount()) != span) {
    throw Error(what + ": could not read " + std::to_string(span) + " bytes of external data from '" +
                file.string() + "'");
  }
  if (dtype == DType::kBool) {
    // Normalise to 0/1: a bool object holding any other byte is undefined behaviour.
    uint8_t* p = static_cast<uint8_t*>(out.raw());
    for (uint64_t i = 0; i < span; ++i) p[i] = p[i] != 0;
  }
  return out;
}

// The typed field that holds `dtype`'s values, and its length.
struct TypedField {
  const char* name;
  int size;
};
TypedField typed_field_for(const onnx::TensorProto& p, DType dtype) {
  switch (dtype) {
    case DType::kF32: return {"float_data", p.float_data_size()};
    case DType::kF64: return {"double_data", p.double_data_size()};
    case DType::kI64: return {"int64_data", p.int64_data_size()};
    default: return {"int32_data", p.int32_data_size()};  // every type of 32 bits or fewer
  }
}

template <typename T, typename Field, typename Convert>
void copy_typed_field(const Field& field, Tensor& out, Convert convert) {
  T* dst = static_cast<T*>(out.raw());
  for (int i = 0; i < field.size(); ++i) dst[i] = convert(field.Get(i));
}

// Copies the typed field into `out`; its length was checked against out's shape already.
// Integer conversions from int32_data are modular (well defined): ONNX stores narrower
// values in the low bits.
void copy_typed_fields(const onnx::TensorProto& proto, Tensor& out) {
  switch (out.dtype()) {
    case DType::kF32: copy_typed_field<float>(proto.float_data(), out, [](float v) { return v; }); return;
    case DType::kF64: copy_typed_field<double>(proto.double_data(), out, [](double v) { return v; }); return;
    case DType::kI64: copy_typed_field<int64_t>(proto.int64_data(), out, [](int64_t v) { return v; }); return;
    case DType::kI32: copy_typed_field<int32_t>(proto.int32_data(), out, [](int32_t v) { return v; }); return;
    case DType::kI8:
      copy_typed_field<int8_t>(proto.int32_data(), out, [](int32_t v) { return static_cast<int8_t>(v); });
      return;
    case DType::kU8:
      copy_typed_field<uint8_t>(proto.int32_data(), out, [](int32_t v) { return static_cast<uint8_t>(v); });
      return;
    case DType::kBool: copy_typed_field<bool>(proto.int32_data(), out, [](int32_t v) { return v != 0; }); return;
    case DType::kF16:
      copy_typed_field<Half>(proto.int32_data(), out, [](int32_t v) {
        Half h;
        h.bits = static_cast<uint16_t>(v);
        return h;
      });
      return;
    default: break;
  }
  throw Error("copy_typed_fields: no typed-field layout for dtype " + std::string(dtype_name(out.dtype())));
}

bool has_typed_data(const onnx::TensorProto& p) {
  return p.float_data_size() || p.int32_data_size() || p.int64_data_size() || p.double_data_size() ||
         p.uint64_data_size() || p.string_data_size();
}

}  // namespace

DType dtype_from_onnx(int32_t t) {
  switch (t) {
    case onnx::TensorProto::FLOAT: return DType::kF32;
    case onnx::TensorProto::FLOAT16: return DType::kF16;
    case onnx::TensorProto::DOUBLE: return DType::kF64;
    case onnx::TensorProto::INT8: return DType::kI8;
    case onnx::TensorProto::UINT8: return DType::kU8;
    case onnx::TensorProto::INT32: return DType::kI32;
    case onnx::TensorProto::INT64: return DType::kI64;
    case onnx::TensorProto::BOOL: return DType::kBool;
    default: return DType::kUnknown;
  }
}

std::string onnx_type_name(int32_t t) {
  if (onnx::TensorProto_DataType_IsValid(t)) {
    return onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(t));
  }
  return std::string("type code ") + std::to_string(t);
}

Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& what, const std::string& base_dir) {
  const DType dtype = dtype_from_onnx(proto.data_type());
  if (dtype == DType::kUnknown) {
    if (proto.data_type() == onnx::TensorProto::UNDEFINED) throw Error(what + ": tensor has no data_type");
    throw UnsupportedError(what + ": dtype " + onnx_type_name(proto.data_type()) +
                           " is not supported (supported: FLOAT, FLOAT16, DOUBLE, INT8, UINT8, INT32, INT64, BOOL)");
  }
  if (proto.has_segment()) throw UnsupportedError(what + ": segmented tensors are not supported");
  Shape shape(proto.dims().begin(), proto.dims().end());
  const uint64_t nbytes = checked_nbytes(shape, dtype, what);

  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    return read_external_data(proto, dtype, shape, nbytes, what, base_dir);
  }
  if (proto.has_raw_data() && (!proto.raw_data().empty() || !has_typed_data(proto))) {
    const std::string& raw = proto.raw_data();
    if (raw.size() != nbytes) {
      throw Error(what + ": raw_data has " + std::to_string(raw.size()) + " bytes, expected " +
                  std::to_string(nbytes) + " for " + tensor_desc(dtype, shape));
    }
    Tensor out(dtype, shape);
    if (dtype == DType::kBool) {
      // Normalise to 0/1: a bool object holding any other byte is undefined behaviour.
      bool* dst = out.data<bool>();
      for (size_t i = 0; i < raw.size(); ++i) dst[i] = raw[i] != 0;
    } else if (nbytes > 0) {
      std::memcpy(out.raw(), raw.data(), raw.size());
    }
    return out;
  }
  const uint64_t numel = nbytes / dtype_size(dtype);
  const TypedField field = typed_field_for(proto, dtype);
  if (static_cast<uint64_t>(field.size) != numel) {
    throw Error(what + ": " + field.name + " has " + std::to_string(field.size) + " values, expected " +
                std::to_string(numel) + " for " + tensor_desc(dtype, shape) +
                (numel > 0 && field.size == 0 ? " (the tensor carries no data)" : ""));
  }
  Tensor out(dtype, shape);
  copy_typed_fields(proto, out);
  return out;
}

std::string read_file_bytes(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) throw Error(path + ": cannot open file (does it exist?)");
  if (!std::filesystem::is_regular_file(status)) throw Error(path + ": not a regular file");
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) throw Error(path + ": cannot open file");
  const std::streamoff size = f.tellg();
  if (size < 0) throw Error(path + ": cannot determine the file size");
  std::string bytes(static_cast<size_t>(size), '\0');
  f.seekg(0);
  f.read(bytes.data(), size);
  if (f.gcount() != size) throw Error(path + ": read " + std::to_string(f.gcount()) + " of " + std::to_string(size) + " bytes");
  return bytes;
}

namespace {
Tensor parse_tensor_proto_bytes(const void* data, size_t size, const std::string& name_for_errors,
                                const std::string& base_dir, std::string* name_out) {
  if (size > static_cast<size_t>(INT_MAX)) {
    throw Error(name_for_errors + ": " + std::to_string(size) + " bytes exceed protobuf's 2 GiB message limit");
  }
  onnx::TensorProto proto;
  if (!proto.ParseFromArray(data, static_cast<int>(size))) {
    throw Error(name_for_errors + ": not a valid ONNX TensorProto (protobuf parsing failed)");
  }
  if (!proto.has_data_type()) {
    throw Error(name_for_errors + ": not a valid ONNX TensorProto (no data_type; a sequence or map file?)");
  }
  if (name_out) *name_out = proto.name();
  const std::string what = proto.name().empty() ? name_for_errors : name_for_errors + ": tensor '" + proto.name() + "'";
  return tensor_from_proto(proto, what, base_dir);
}
}  // namespace

std::string folder_of(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? std::filesystem::path(".").string() : parent.string();
}

Tensor parse_onnx_tensor(const void* data, size_t size, const std::string& name_for_errors, std::string* name_out) {
  return parse_tensor_proto_bytes(data, size, name_for_errors, "", name_out);
}

Tensor load_onnx_tensor_file(const std::string& path, std::string* name_out) {
  const std::string bytes = read_file_bytes(path);
  return parse_tensor_proto_bytes(bytes.data(), bytes.size(), path, folder_of(path), name_out);
}

}  // namespace xnn
