// Encoding the IR as an .xnn file: the FlatBuffer description plus a list of where each
// constant tensor's bytes go in the data section (the bytes themselves are not copied here).
#include <bit>
#include <cstring>
#include <unordered_map>

#include "engine/coding/symbol_stream.h"
#include "engine/format/xnn_generated.h"
#include "engine/format/xnn_layout.h"

namespace xnn::xnn_file {

namespace {

static_assert(sizeof(bool) == 1, "bool tensors are stored as one byte per element");

using StringOffsets = std::vector<flatbuffers::Offset<flatbuffers::String>>;

// A Codebook tensor's coded bytes (engine/format/xnn.fbs): made once per value and reused by
// every layout pass of encode_model.
struct CodedTensor {
  std::shared_ptr<const std::string> codebook;  // K float32
  std::shared_ptr<const std::string> symbols;   // coded codebook indices
  std::shared_ptr<const std::string> gaps;      // sparse layout: coded gap symbols; else null
  uint8_t bits = 0;
  uint8_t gap_bits = 0;
};
using CodedTensors = std::map<const Value*, CodedTensor>;

CodedTensor code_tensor(const Tensor& t, const WeightCoding& c, const std::string& what) {
  if (t.dtype() != DType::kF32) {
    throw Error(what + ": coded weights must be float32, not " + std::string(dtype_name(t.dtype())));
  }
  const size_t k = c.codebook.size();
  if (k == 0 || k > coding::kMaxAlphabet) {
    throw Error(what + ": codebook of " + std::to_string(k) + " values (expected 1.." +
                std::to_string(coding::kMaxAlphabet) + ")");
  }
  if (c.gap_bits < 0 || c.gap_bits > 12) {
    throw Error(what + ": gap width " + std::to_string(c.gap_bits) + " bits (expected 0 for dense, 1..12 for sparse)");
  }
  std::unordered_map<uint32_t, uint16_t> index_of;
  for (size_t i = 0; i < k; ++i) {
    uint32_t bits = 0;
    std::memcpy(&bits, &c.codebook[i], 4);
    if (!index_of.emplace(bits, static_cast<uint16_t>(i)).second) {
      throw Error(what + ": codebook value " + std::to_string(c.codebook[i]) + " appears twice");
    }
  }
  const auto* data = static_cast<const uint32_t*>(t.raw());  // float bits
  const int64_t numel = t.numel();
  std::vector<uint16_t> symbols, gaps;
  const uint32_t escape = (1u << c.gap_bits) - 1;
  uint32_t run = 0;  // zeros since the last stored element (sparse layout)
  for (int64_t i = 0; i < numel; ++i) {
    if (c.gap_bits > 0 && data[i] == 0) {
      if (++run == escape) {
        gaps.push_back(static_cast<uint16_t>(escape));
        run = 0;
      }
      continue;
    }
    const auto it = index_of.find(data[i]);
    if (it == index_of.end()) {
      float v = 0;
      std::memcpy(&v, &data[i], 4);
      throw Error(what + ": element " + std::to_string(i) + " (" + std::to_string(v) + ") is not in its codebook of " +
                  std::to_string(k) + " values");
    }
    symbols.push_back(it->second);
    if (c.gap_bits > 0) {
      gaps.push_back(static_cast<uint16_t>(run));
      run = 0;
    }
  }
  CodedTensor out;
  out.codebook = std::make_shared<const std::string>(reinterpret_cast<const char*>(c.codebook.data()), k * 4);
  out.symbols = std::make_shared<const std::string>(
      coding::encode_symbols(symbols, static_cast<uint32_t>(k), c.coder).bytes);
  if (c.gap_bits > 0) out.gaps = std::make_shared<const std::string>(coding::encode_symbols(gaps, escape + 1, c.coder).bytes);
  out.bits = static_cast<uint8_t>(k <= 1 ? 0 : std::bit_width(k - 1));
  out.gap_bits = static_cast<uint8_t>(c.gap_bits);
  return out;
}

class Encoder {
 public:
  // Blob offsets are file offsets, so they depend on where the data section starts, which in
  // turn depends on the size of the FlatBuffer being built: see encode_model.
  Encoder(uint64_t data_offset, CodedTensors& coded) : data_offset_(data_offset), coded_(coded) {
    // Write every scalar, even when it equals its default: -0.0f then survives bit-exactly,
    // and the FlatBuffer's size does not depend on the values, only on the model's structure.
    fbb_.ForceDefaults(true);
  }

  void encode(const Model& model, const XnnSaveOptions& options, const std::string& name) {
    std::map<std::string, std::string> merged = model.metadata.options;
    for (const auto& [key, value] : options.extra_options) merged.insert_or_assign(key, value);

    auto graph = encode_graph(model.graph, name, 0);
    std::vector<flatbuffers::Offset<fb::KeyValue>> kvs;
    for (const auto& [key, value] : merged) kvs.push_back(fb::CreateKeyValue(fbb_, text(key), text(value)));
    auto root = fb::CreateModel(fbb_, kXnnFormatVersion, model.opset, text(model.metadata.producer),
                                text(model.metadata.source_sha256), fbb_.CreateVector(kvs), graph);
    fb::FinishModelBuffer(fbb_, root);
  }

  const uint8_t* flatbuffer() const { return fbb_.GetBufferPointer(); }
  size_t flatbuffer_size() const { return fbb_.GetSize(); }
  const std::vector<EncodedFile::Blob>& blobs() const { return blobs_; }
  uint64_t data_size() const { return align_up(data_used_, kBlobAlignment); }

 private:
  flatbuffers::Offset<fb::Graph> encode_graph(const Graph& g, const std::string& where, int depth) {
    if (depth > kMaxGraphNesting) {
      throw Error(where + ": graph nesting deeper than " + std::to_string(kMaxGraphNesting));
    }
    // Refuse to write what the reader would refuse to load.
    g.validate(where);
    std::vector<flatbuffers::Offset<fb::Value>> values;
    values.reserve(g.values.size());
    for (const Value& v : g.values) values.push_back(encode_value(v, where));
    std::vector<flatbuffers::Offset<fb::Node>> nodes;
    nodes.reserve(g.nodes.size());
    for (const Node& n : g.nodes) nodes.push_back(encode_node(n, where, depth));
    return fb::CreateGraph(fbb_, text(g.name), fbb_.CreateVector(values), fbb_.CreateVector(nodes),
                           fbb_.CreateVector(g.inputs), fbb_.CreateVector(g.outputs));
  }

  flatbuffers::Offset<fb::Value> encode_value(const Value& v, const std::string& where) {
    const std::string what = where + ": value '" + v.name + "'";
    std::vector<int64_t> dims;
    StringOffsets symbols;
    bool any_symbol = false;
    for (const Dim& d : v.shape) {
      if (d.value < -1) {
        throw Error(what + ": dimension " + std::to_string(d.value) + " is invalid (expected >= 0, or -1 for unknown)");
      }
      dims.push_back(d.value);
      any_symbol = any_symbol || !d.symbol.empty();
    }
    // Names are written only when some dimension has one.
    if (any_symbol) {
      for (const Dim& d : v.shape) symbols.push_back(text(d.symbol));
    }
    flatbuffers::Offset<fb::TensorRef> data = 0;
    if (v.data && v.coding) {
      data = encode_coded_tensor(v, what);
    } else if (v.data) {
      data = encode_tensor(*v.data, what);
    }
    flatbuffers::Offset<fb::QuantParams> quant = 0;
    if (v.quant) {
      quant = fb::CreateQuantParams(fbb_, fbb_.CreateVector(v.quant->scale), fbb_.CreateVector(v.quant->zero_point),
                                    v.quant->axis);
    }
    return fb::CreateValue(fbb_, text(v.name), static_cast<fb::DType>(v.dtype), v.has_shape, fbb_.CreateVector(dims),
                           any_symbol ? fbb_.CreateVector(symbols) : 0, data, v.trainable, v.outer_scope, quant);
  }

  flatbuffers::Offset<fb::Node> encode_node(const Node& n, const std::string& where, int depth) {
    const std::string what = where + ": " + n.describe();
    std::vector<flatbuffers::Offset<fb::Attr>> attrs;
    for (const auto& [key, attr] : n.attrs) attrs.push_back(encode_attr(key, attr, what, depth));
    return fb::CreateNode(fbb_, text(n.op_type), text(n.domain), text(n.name), fbb_.CreateVector(n.inputs),
                          fbb_.CreateVector(n.outputs), fbb_.CreateVector(attrs));
  }

  flatbuffers::Offset<fb::Attr> encode_attr(const std::string& key, const Attribute& a, const std::string& where,
                                            int depth) {
    const std::string what = where + ": attribute '" + key + "'";
    int64_t i = 0;
    float f = 0.0f;
    flatbuffers::Offset<flatbuffers::String> s = 0;
    flatbuffers::Offset<flatbuffers::Vector<int64_t>> ints = 0;
    flatbuffers::Offset<flatbuffers::Vector<float>> floats = 0;
    flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>> strings = 0;
    flatbuffers::Offset<fb::TensorRef> tensor = 0;
    flatbuffers::Offset<fb::Graph> graph = 0;
    flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Graph>>> graphs = 0;
    switch (a.kind()) {
      case Attribute::Kind::kInt: i = *a.get_if<int64_t>(); break;
      case Attribute::Kind::kFloat: f = *a.get_if<float>(); break;
      case Attribute::Kind::kString: s = text(*a.get_if<std::string>()); break;
      case Attribute::Kind::kInts: ints = fbb_.CreateVector(*a.get_if<std::vector<int64_t>>()); break;
      case Attribute::Kind::kFloats: floats = fbb_.CreateVector(*a.get_if<std::vector<float>>()); break;
      case Attribute::Kind::kStrings: {
        StringOffsets items;
        for (const std::string& item : *a.get_if<std::vector<std::string>>()) items.push_back(text(item));
        strings = fbb_.CreateVector(items);
        break;
      }
      case Attribute::Kind::kTensor: tensor = encode_tensor(*a.get_if<Tensor>(), what); break;
      case Attribute::Kind::kGraph: graph = encode_subgraph(*a.get_if<std::shared_ptr<Graph>>(), what, depth); break;
      case Attribute::Kind::kGraphs: {
        const auto& list = *a.get_if<std::vector<std::shared_ptr<Graph>>>();
        std::vector<flatbuffers::Offset<fb::Graph>> items;
        for (size_t k = 0; k < list.size(); ++k) {
          items.push_back(encode_subgraph(list[k], what + "[" + std::to_string(k) + "]", depth));
        }
        graphs = fbb_.CreateVector(items);
        break;
      }
    }
    return fb::CreateAttr(fbb_, text(key), static_cast<fb::AttrKind>(a.kind()), i, f, s, ints, floats, strings,
                          tensor, graph, graphs);
  }

  flatbuffers::Offset<fb::Graph> encode_subgraph(const std::shared_ptr<Graph>& g, const std::string& what, int depth) {
    if (!g) throw Error(what + ": graph attribute holds no graph");
    return encode_graph(*g, what, depth + 1);
  }

  // Reserves the tensor's place in the data section and describes it.
  flatbuffers::Offset<fb::TensorRef> encode_tensor(const Tensor& t, const std::string& what) {
    if (!t.defined()) throw Error(what + ": constant tensor has no data");
    if (dtype_size(t.dtype()) == 0) throw Error(what + ": constant tensor has dtype 'unknown'");
    const uint64_t relative = align_up(data_used_, kBlobAlignment);
    const uint64_t size = t.nbytes();
    blobs_.push_back({data_offset_ + relative, t.raw(), static_cast<size_t>(size)});
    data_used_ = relative + size;
    auto blob = fb::CreateBlobRef(fbb_, data_offset_ + relative, size);
    return fb::CreateTensorRef(fbb_, static_cast<fb::DType>(t.dtype()), fbb_.CreateVector(t.shape()),
                               fb::WeightEncoding::Dense, blob, 0);
  }

  // A Codebook tensor (xnn.fbs): coded once, placed again in every layout pass.
  flatbuffers::Offset<fb::TensorRef> encode_coded_tensor(const Value& v, const std::string& what) {
    const Tensor& t = *v.data;
    if (!t.defined()) throw Error(what + ": constant tensor has no data");
    auto found = coded_.find(&v);
    if (found == coded_.end()) found = coded_.emplace(&v, code_tensor(t, *v.coding, what)).first;
    const CodedTensor& c = found->second;
    auto symbols = place(c.symbols);
    auto codebook = place(c.codebook);
    flatbuffers::Offset<fb::BlobRef> gaps = c.gaps ? place(c.gaps) : 0;
    auto params = fb::CreateEncodingParams(fbb_, c.bits, codebook, gaps, 0, 0, c.gap_bits);
    return fb::CreateTensorRef(fbb_, static_cast<fb::DType>(t.dtype()), fbb_.CreateVector(t.shape()),
                               fb::WeightEncoding::Codebook, symbols, params);
  }

  flatbuffers::Offset<fb::BlobRef> place(const std::shared_ptr<const std::string>& bytes) {
    const uint64_t relative = align_up(data_used_, kBlobAlignment);
    blobs_.push_back({data_offset_ + relative, bytes->data(), bytes->size()});
    owned_.push_back(bytes);
    data_used_ = relative + bytes->size();
    return fb::CreateBlobRef(fbb_, data_offset_ + relative, bytes->size());
  }

  flatbuffers::Offset<flatbuffers::String> text(const std::string& s) { return fbb_.CreateString(s); }

  flatbuffers::FlatBufferBuilder fbb_;
  uint64_t data_offset_;
  uint64_t data_used_ = 0;  // bytes of the data section taken so far
  std::vector<EncodedFile::Blob> blobs_;
  CodedTensors& coded_;
  std::vector<std::shared_ptr<const std::string>> owned_;

 public:
  const std::vector<std::shared_ptr<const std::string>>& owned() const { return owned_; }
};

}  // namespace

EncodedFile encode_model(const Model& model, const XnnSaveOptions& options, const std::string& name) {
  // The data section starts after the FlatBuffer, whose size is only known once it is built.
  // Its size does not depend on the blob offsets it records (all scalars are always written),
  // so a second pass with the real data offset settles the layout.
  uint64_t data_offset = kHeaderSize;
  CodedTensors coded;
  for (int pass = 0; pass < 3; ++pass) {
    Encoder encoder(data_offset, coded);
    encoder.encode(model, options, name);
    // The reader wants an 8-byte multiple; trailing zeros after a FlatBuffer are harmless.
    const uint64_t flatbuffer_size = align_up(encoder.flatbuffer_size(), 8);
    const uint64_t needed = align_up(kHeaderSize + flatbuffer_size, kBlobAlignment);
    if (needed != data_offset) {
      data_offset = needed;
      continue;
    }
    Header header;
    header.flatbuffer_offset = kHeaderSize;
    header.flatbuffer_size = flatbuffer_size;
    header.data_offset = data_offset;
    header.data_size = encoder.data_size();
    header.file_size = data_offset + header.data_size;

    EncodedFile out;
    out.head = encode_header(header);
    out.head.append(reinterpret_cast<const char*>(encoder.flatbuffer()), encoder.flatbuffer_size());
    out.head.resize(data_offset, '\0');
    out.blobs = encoder.blobs();
    out.owned = encoder.owned();
    out.file_size = header.file_size;
    return out;
  }
  throw Error("internal error: the .xnn layout did not settle (FlatBuffer size changed between passes)");
}

}  // namespace xnn::xnn_file
