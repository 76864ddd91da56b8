// Decoding an .xnn file into the IR. Files may be truncated, corrupted or hostile, so nothing
// is used before it is checked: the header against the file size (decode_header), the
// FlatBuffer structure with flatbuffers::Verifier, then every index, enum, dimension and blob
// range here, and finally Graph::validate. Each failure is an xnn::Error naming the file and
// the element at fault.
#include <bit>
#include <cstring>

#include "engine/coding/symbol_stream.h"
#include "engine/format/xnn_generated.h"
#include "engine/format/xnn_layout.h"

namespace xnn::xnn_file {

namespace {

static_assert(std::endian::native == std::endian::little,
              "tensor blobs are little-endian and mapped without conversion");
static_assert(static_cast<int>(fb::DType::F64) == static_cast<int>(DType::kF64) &&
                  static_cast<int>(fb::DType::Bool) == static_cast<int>(DType::kBool) &&
                  static_cast<int>(fb::DType::F16) == static_cast<int>(DType::kF16),
              "fb::DType mirrors xnn::DType value for value");
static_assert(static_cast<int>(fb::AttrKind::Graphs) == static_cast<int>(Attribute::Kind::kGraphs) &&
                  static_cast<int>(fb::AttrKind::Tensor) == static_cast<int>(Attribute::Kind::kTensor),
              "fb::AttrKind mirrors Attribute::Kind value for value");

// Elements beyond this make a tensor unreasonably large for any device we target; checking it
// per dimension and per product keeps numel * element size far from overflowing.
constexpr int64_t kMaxTensorElements = int64_t{1} << 40;

// Verifier limits. Table depth: Model, then three tables (Graph, Node, Attr) per subgraph
// level, then at most five leaf levels (Value/TensorRef/EncodingParams/BlobRef...); one
// level beyond kMaxGraphNesting still verifies so the decoder can report the nesting itself.
constexpr flatbuffers::uoffset_t kMaxTableDepth = 1 + 3 * (kMaxGraphNesting + 2) + 6;

std::string quoted(const std::string& s) { return "'" + s + "'"; }

std::string value_label(const std::string& name, size_t index) {
  return name.empty() ? "value #" + std::to_string(index) : "value " + quoted(name);
}

std::string node_label(const std::string& name, const std::string& op_type, size_t index) {
  return (name.empty() ? "node #" + std::to_string(index) : "node " + quoted(name)) + " (" + op_type + ")";
}

class Decoder {
 public:
  Decoder(const std::shared_ptr<Buffer>& storage, const Header& header, const std::string& name)
      : storage_(storage),
        file_(static_cast<const uint8_t*>(storage->data())),
        header_(header),
        name_(name),
        // Our writer never shares strings or vectors, so decoded payload is at most the size
        // of the FlatBuffer; the slack admits writers that share some, while a corrupted file
        // that points thousands of entries at one big vector cannot blow up memory.
        decode_budget_(4 * header.flatbuffer_size + (uint64_t{1} << 20)),
        // Coded weights legitimately expand a lot (a pruned tensor of zeros codes to a few
        // bytes), but a hostile file must not make a tiny file allocate terabytes.
        coded_budget_((uint64_t{64} << 20) + 256 * header.file_size) {}

  Model model(const fb::Model& m) {
    if (m.format_version() != header_.format_version) {
      throw Error(name_ + ": model description says format version " + std::to_string(m.format_version()) +
                  " but the header says " + std::to_string(header_.format_version));
    }
    Model out;
    out.opset = m.opset();
    out.metadata.producer = str(m.producer());
    out.metadata.source_sha256 = str(m.source_sha256());
    if (const auto* options = m.options()) {
      for (flatbuffers::uoffset_t i = 0; i < options->size(); ++i) {
        const fb::KeyValue* kv = options->Get(i);
        if (!kv->key()) throw Error(name_ + ": metadata option #" + std::to_string(i) + " has no key");
        std::string key = str(kv->key());
        if (out.metadata.options.count(key)) throw Error(name_ + ": metadata option " + quoted(key) + " appears twice");
        out.metadata.options[key] = str(kv->value());
      }
    }
    if (!m.graph()) throw Error(name_ + ": model has no graph");
    out.graph = graph(*m.graph(), name_, 0);
    return out;
  }

 private:
  Graph graph(const fb::Graph& g, const std::string& where, int depth) {
    if (depth > kMaxGraphNesting) {
      throw Error(where + ": graph nesting deeper than " + std::to_string(kMaxGraphNesting));
    }
    Graph out;
    out.name = str(g.name());
    if (const auto* values = g.values()) {
      out.values.reserve(values->size());
      for (flatbuffers::uoffset_t i = 0; i < values->size(); ++i) out.values.push_back(value(*values->Get(i), i, where));
    }
    const size_t value_count = out.values.size();
    out.inputs = indices(g.inputs(), value_count, false, where + ": graph input");
    out.outputs = indices(g.outputs(), value_count, false, where + ": graph output");
    if (const auto* nodes = g.nodes()) {
      out.nodes.reserve(nodes->size());
      for (flatbuffers::uoffset_t i = 0; i < nodes->size(); ++i) {
        out.nodes.push_back(node(*nodes->Get(i), i, value_count, where, depth));
      }
    }
    out.validate(where);
    return out;
  }

  Value value(const fb::Value& v, size_t index, const std::string& where) {
    Value out;
    out.name = str(v.name());
    const std::string what = where + ": " + value_label(out.name, index);
    out.dtype = dtype(v.dtype(), what, /*allow_unknown=*/true);
    out.has_shape = v.has_shape();
    const std::vector<int64_t> dims = vec(v.dims());
    const std::vector<std::string> symbols = strings(v.dim_symbols());
    if (!symbols.empty() && symbols.size() != dims.size()) {
      throw Error(what + ": " + std::to_string(symbols.size()) + " dimension names for " +
                  std::to_string(dims.size()) + " dimensions");
    }
    out.shape.reserve(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] < -1) {
        throw Error(what + ": dimension " + std::to_string(dims[i]) + " is invalid (expected >= 0, or -1 for unknown)");
      }
      out.shape.push_back(Dim{dims[i], symbols.empty() ? std::string() : symbols[i]});
    }
    if (v.data()) out.data = tensor(*v.data(), what);
    out.trainable = v.trainable();
    out.outer_scope = v.outer_scope();
    if (const fb::QuantParams* q = v.quant()) {
      QuantParams qp;
      qp.scale = vec(q->scale());
      qp.zero_point = vec(q->zero_point());
      qp.axis = q->axis();
      out.quant = std::move(qp);
    }
    return out;
  }

  Node node(const fb::Node& n, size_t index, size_t value_count, const std::string& where, int depth) {
    Node out;
    out.op_type = str(n.op_type());
    out.domain = str(n.domain());
    out.name = str(n.name());
    const std::string what = where + ": " + node_label(out.name, out.op_type, index);
    if (out.op_type.empty()) throw Error(what + ": op type is missing");
    out.inputs = indices(n.inputs(), value_count, true, what + ": input");
    out.outputs = indices(n.outputs(), value_count, true, what + ": output");
    if (const auto* attrs = n.attrs()) {
      for (flatbuffers::uoffset_t i = 0; i < attrs->size(); ++i) {
        const fb::Attr& a = *attrs->Get(i);
        std::string key = str(a.name());
        if (key.empty()) throw Error(what + ": attribute #" + std::to_string(i) + " has no name");
        if (out.attrs.count(key)) throw Error(what + ": attribute " + quoted(key) + " appears twice");
        out.attrs.emplace(key, attribute(a, what + ": attribute " + quoted(key), depth));
      }
    }
    return out;
  }

  Attribute attribute(const fb::Attr& a, const std::string& what, int depth) {
    switch (a.kind()) {
      case fb::AttrKind::Int: return Attribute(static_cast<int64_t>(a.i()));
      case fb::AttrKind::Float: return Attribute(a.f());
      case fb::AttrKind::String: return Attribute(str(a.s()));
      case fb::AttrKind::Ints: return Attribute(vec(a.ints()));
      case fb::AttrKind::Floats: return Attribute(vec(a.floats()));
      case fb::AttrKind::Strings: return Attribute(strings(a.strings()));
      case fb::AttrKind::Tensor:
        if (!a.tensor()) throw Error(what + ": tensor attribute has no tensor");
        return Attribute(tensor(*a.tensor(), what));
      case fb::AttrKind::Graph:
        if (!a.graph()) throw Error(what + ": graph attribute has no graph");
        return Attribute(std::make_shared<Graph>(graph(*a.graph(), what, depth + 1)));
      case fb::AttrKind::Graphs: {
        std::vector<std::shared_ptr<Graph>> graphs;
        if (const auto* gs = a.graphs()) {
          charge(gs->size() * sizeof(std::shared_ptr<Graph>));
          for (flatbuffers::uoffset_t i = 0; i < gs->size(); ++i) {
            graphs.push_back(std::make_shared<Graph>(graph(*gs->Get(i), what + "[" + std::to_string(i) + "]", depth + 1)));
          }
        }
        return Attribute(std::move(graphs));
      }
    }
    throw Error(what + ": attribute kind " + std::to_string(static_cast<int>(a.kind())) +
                " is not known to this build");
  }

  Tensor tensor(const fb::TensorRef& t, const std::string& what) {
    const DType type = dtype(t.dtype(), what, /*allow_unknown=*/false);
    if (t.encoding() != fb::WeightEncoding::Dense && t.encoding() != fb::WeightEncoding::Codebook) {
      const char* encoding_name = fb::EnumNameWeightEncoding(t.encoding());
      throw Error(what + ": weight encoding " +
                  (*encoding_name ? std::string(encoding_name) : std::to_string(static_cast<int>(t.encoding()))) +
                  " is not supported by this build");
    }
    Shape shape = vec(t.dims());
    int64_t numel = 1;
    for (int64_t d : shape) {
      if (d < 0) throw Error(what + ": constant dimension " + std::to_string(d) + " is negative");
      if (d > kMaxTensorElements || (d != 0 && numel > kMaxTensorElements / d)) {
        throw Error(what + ": constant of shape " + shape_str(shape) + " has more than 2^40 elements");
      }
      numel *= d;
    }
    const fb::BlobRef* blob = t.blob();
    if (!blob) throw Error(what + ": constant has no data blob");
    const auto [offset, size] = blob_range(*blob, what + ": blob");
    if (t.encoding() == fb::WeightEncoding::Codebook) return codebook_tensor(t, type, std::move(shape), offset, size, what);
    const uint64_t expected = static_cast<uint64_t>(numel) * dtype_size(type);
    if (size != expected) {
      throw Error(what + ": blob is " + std::to_string(size) + " bytes but " + std::string(dtype_name(type)) + " " +
                  shape_str(shape) + " needs " + std::to_string(expected));
    }
    if (type == DType::kBool) {
      // Any byte other than 0/1 read as bool is undefined behaviour.
      for (uint64_t i = 0; i < size; ++i) {
        if (file_[offset + i] > 1) {
          throw Error(what + ": bool element " + std::to_string(i) + " is " + std::to_string(file_[offset + i]) +
                      " (expected 0 or 1)");
        }
      }
    }
    return Tensor(type, std::move(shape), storage_, static_cast<size_t>(offset));
  }

  // A blob's [offset, size], checked to lie inside the data section and to be aligned.
  std::pair<uint64_t, uint64_t> blob_range(const fb::BlobRef& blob, const std::string& what) {
    const uint64_t offset = blob.offset();
    const uint64_t size = blob.size();
    const uint64_t data_end = header_.data_offset + header_.data_size;  // == file size, checked
    if (offset < header_.data_offset || offset > data_end || size > data_end - offset) {
      throw Error(what + " [offset " + std::to_string(offset) + ", size " + std::to_string(size) +
                  "] exceeds the data section [offset " + std::to_string(header_.data_offset) + ", size " +
                  std::to_string(header_.data_size) + "]");
    }
    if (offset % kBlobAlignment != 0) {
      throw Error(what + " offset " + std::to_string(offset) + " is not " + std::to_string(kBlobAlignment) +
                  "-byte aligned");
    }
    return {offset, size};
  }

  // Decodes a Codebook tensor (xnn.fbs) once, here, into ordinary dense float32 storage.
  Tensor codebook_tensor(const fb::TensorRef& t, DType type, Shape shape, uint64_t offset, uint64_t size,
                         const std::string& what) {
    if (type != DType::kF32) throw Error(what + ": Codebook encoding needs float32 data, not " + std::string(dtype_name(type)));
    const fb::EncodingParams* p = t.encoding_params();
    if (!p || !p->codebook()) throw Error(what + ": Codebook encoding without a codebook");
    const auto [book_offset, book_size] = blob_range(*p->codebook(), what + ": codebook blob");
    const uint64_t k = book_size / 4;
    if (book_size % 4 != 0 || k == 0 || k > coding::kMaxAlphabet) {
      throw Error(what + ": codebook blob of " + std::to_string(book_size) + " bytes (expected 1.." +
                  std::to_string(coding::kMaxAlphabet) + " float32 values)");
    }
    if (p->bits() > 12 || k > (uint64_t{1} << p->bits())) {
      throw Error(what + ": codebook of " + std::to_string(k) + " values does not fit " + std::to_string(p->bits()) +
                  "-bit indices");
    }
    const int gap_bits = p->gap_bits();
    if (gap_bits > 12) throw Error(what + ": gap width " + std::to_string(gap_bits) + " bits (expected 0..12)");
    if (gap_bits > 0 && !p->indices()) throw Error(what + ": sparse Codebook encoding without a gap stream");
    const uint64_t numel = static_cast<uint64_t>(shape_numel(shape));
    coded_bytes_ += numel * 4;
    if (coded_bytes_ > coded_budget_) {
      throw Error(what + ": coded weights decode to more than " + std::to_string(coded_budget_) + " bytes (corrupted?)");
    }
    std::vector<float> codebook(k);
    std::memcpy(codebook.data(), file_ + book_offset, book_size);
    Tensor out(DType::kF32, std::move(shape));
    float* dst = out.data<float>();
    try {
      const std::vector<uint16_t> symbols =
          coding::decode_symbols(file_ + offset, size, static_cast<uint32_t>(k), numel);
      if (gap_bits == 0) {
        if (symbols.size() != numel) {
          throw Error("index stream has " + std::to_string(symbols.size()) + " symbols for " + std::to_string(numel) +
                      " elements");
        }
        for (uint64_t i = 0; i < numel; ++i) dst[i] = codebook[symbols[i]];
      } else {
        const auto [gaps_offset, gaps_size] = blob_range(*p->indices(), "gap blob");
        const uint32_t escape = (1u << gap_bits) - 1;
        // At most one gap symbol per element plus one escape per `escape` zeros.
        const std::vector<uint16_t> gaps =
            coding::decode_symbols(file_ + gaps_offset, gaps_size, escape + 1, numel + numel / escape + 1);
        uint64_t pos = 0;
        size_t next = 0;
        for (uint16_t g : gaps) {
          pos += g;
          if (g == escape) continue;
          if (pos >= numel || next >= symbols.size()) {
            throw Error("gap stream runs past the tensor's " + std::to_string(numel) + " elements or its " +
                        std::to_string(symbols.size()) + " stored values");
          }
          dst[pos++] = codebook[symbols[next++]];
        }
        if (pos > numel || next != symbols.size()) {
          throw Error("gap stream places " + std::to_string(next) + " of " + std::to_string(symbols.size()) +
                      " stored values within " + std::to_string(numel) + " elements");
        }
      }
    } catch (const Error& e) {
      throw Error(what + ": Codebook weights: " + e.what());
    }
    return out;
  }

  DType dtype(fb::DType t, const std::string& what, bool allow_unknown) {
    const auto raw = static_cast<int>(t);
    if (raw > static_cast<int>(fb::DType::MAX)) {
      throw Error(what + ": dtype " + std::to_string(raw) + " is not known to this build (expected 0.." +
                  std::to_string(static_cast<int>(fb::DType::MAX)) + ")");
    }
    if (!allow_unknown && t == fb::DType::Unknown) throw Error(what + ": constant data has dtype 'unknown'");
    return static_cast<DType>(raw);
  }

  std::vector<int> indices(const flatbuffers::Vector<int32_t>* v, size_t value_count, bool allow_absent,
                           const std::string& what) {
    std::vector<int> out = vec(v);
    for (int i : out) {
      if ((i == -1 && allow_absent) || (i >= 0 && static_cast<size_t>(i) < value_count)) continue;
      throw Error(what + " index " + std::to_string(i) + " out of range (" + std::to_string(value_count) + " values)");
    }
    return out;
  }

  template <typename T>
  std::vector<T> vec(const flatbuffers::Vector<T>* v) {
    std::vector<T> out;
    if (!v) return out;
    charge(static_cast<uint64_t>(v->size()) * sizeof(T));
    // Copied bytewise: the Verifier checks the length field's alignment but not that 8-byte
    // elements are 8-byte aligned, and a misaligned load is undefined behaviour.
    out.resize(v->size());
    if (!out.empty()) std::memcpy(out.data(), v->Data(), out.size() * sizeof(T));
    return out;
  }

  std::vector<std::string> strings(const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>* v) {
    std::vector<std::string> out;
    if (!v) return out;
    charge(static_cast<uint64_t>(v->size()) * sizeof(std::string));
    out.reserve(v->size());
    for (flatbuffers::uoffset_t i = 0; i < v->size(); ++i) out.push_back(str(v->Get(i)));
    return out;
  }

  std::string str(const flatbuffers::String* s) {
    if (!s) return {};
    charge(s->size());
    return s->str();
  }

  void charge(uint64_t bytes) {
    decoded_bytes_ += bytes;
    if (decoded_bytes_ > decode_budget_) {
      throw Error(name_ + ": model description decodes to more than " + std::to_string(decode_budget_) +
                  " bytes, far more than its " + std::to_string(header_.flatbuffer_size) + " stored bytes (corrupted)");
    }
  }

  std::shared_ptr<Buffer> storage_;
  const uint8_t* file_;
  Header header_;
  std::string name_;
  uint64_t decode_budget_;
  uint64_t decoded_bytes_ = 0;
  uint64_t coded_budget_;
  uint64_t coded_bytes_ = 0;
};

}  // namespace

Model decode_model(const std::shared_ptr<Buffer>& storage, const std::string& name) {
  const auto* file = static_cast<const uint8_t*>(storage->data());
  const Header header = decode_header(file, storage->size(), name);
  const uint8_t* flatbuffer = file + header.flatbuffer_offset;

  flatbuffers::Verifier::Options limits;
  limits.max_depth = kMaxTableDepth;
  // Every table takes at least 4 bytes and our writer shares none, so this bounds the work
  // (and the decoded size) of a file whose offsets make tables repeat.
  limits.max_tables = static_cast<flatbuffers::uoffset_t>(header.flatbuffer_size / 4 + 1);
  flatbuffers::Verifier verifier(flatbuffer, static_cast<size_t>(header.flatbuffer_size), limits);
  if (!fb::VerifyModelBuffer(verifier)) {
    throw Error(name + ": model description is corrupted (FlatBuffers verification failed)");
  }
  return Decoder(storage, header, name).model(*fb::GetModel(flatbuffer));
}

}  // namespace xnn::xnn_file
