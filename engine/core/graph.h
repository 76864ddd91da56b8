// Graph IR. A Graph owns its values (tensors flowing between nodes, with optional constant
// data) and nodes (op applications referring to values by index). Nested graphs (If/Loop
// bodies) hang off node attributes and may read outer-scope values by name.
//
// What later stages need is carried here from the start: constant data per value (initialisers,
// which training marks trainable), quantisation parameters per value (per-tensor or
// per-channel), symbolic dimensions resolved when a session is created, and the op set version.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "engine/coding/symbol_stream.h"
#include "engine/core/tensor.h"

namespace xnn {

struct Graph;

// One dimension of a declared shape: a known size, or a named symbol ("batch"), or unknown.
struct Dim {
  int64_t value = -1;   // >= 0 when known
  std::string symbol;   // non-empty for symbolic dims
  bool known() const { return value >= 0; }
  static Dim fixed(int64_t v) { return Dim{v, {}}; }
  static Dim named(std::string s) { return Dim{-1, std::move(s)}; }
  bool operator==(const Dim&) const = default;
};
std::string dims_str(const std::vector<Dim>& dims);  // "[batch,3,224,224]"

// Affine quantisation: real = scale * (q - zero_point). Per-tensor when axis < 0 (one scale),
// per-channel along `axis` otherwise (one scale per channel).
struct QuantParams {
  std::vector<float> scale;
  std::vector<int32_t> zero_point;
  int axis = -1;
  bool operator==(const QuantParams&) const = default;
};

// A request to store a float32 constant coded in .xnn (engine/format/xnn.fbs, encoding
// Codebook): every element equals one of `codebook` (weight clustering), stored as
// entropy-coded codebook indices; with gap_bits > 0 zeros are left out and the distances
// between stored elements are coded instead (sparse). Only save_xnn reads it (and refuses data
// that is not in the codebook); load_xnn decodes coded tensors into ordinary dense data and
// leaves it empty, so a loaded model is a plain one.
struct WeightCoding {
  std::vector<float> codebook;  // 1..4096 values, compared bit for bit
  coding::SymbolCoder coder = coding::SymbolCoder::kRans;
  int gap_bits = 0;             // 0: dense layout; 1..12: sparse layout, gap symbols < 2^gap_bits
  bool operator==(const WeightCoding&) const = default;
};

struct Value {
  std::string name;
  DType dtype = DType::kUnknown;
  bool has_shape = false;       // rank known
  std::vector<Dim> shape;       // meaningful when has_shape
  std::optional<Tensor> data;   // constant/initialiser data
  bool trainable = false;       // an initialiser that training updates
  bool outer_scope = false;     // in a subgraph: resolved by name in the enclosing graph
  std::optional<QuantParams> quant;
  std::optional<WeightCoding> coding;  // how save_xnn stores `data` (absent: dense)

  bool is_constant() const { return data.has_value(); }
  // The shape as concrete dims; throws naming the value if any dim is not known.
  Shape static_shape() const;
  bool shape_fully_known() const;
};

class Attribute {
 public:
  enum class Kind : uint8_t { kInt, kFloat, kString, kInts, kFloats, kStrings, kTensor, kGraph, kGraphs };
  using Storage = std::variant<int64_t, float, std::string, std::vector<int64_t>, std::vector<float>,
                               std::vector<std::string>, Tensor, std::shared_ptr<Graph>,
                               std::vector<std::shared_ptr<Graph>>>;

  Attribute() : v_(int64_t{0}) {}
  Attribute(int64_t v) : v_(v) {}                                    // NOLINT
  Attribute(int v) : v_(int64_t{v}) {}                                // NOLINT
  Attribute(float v) : v_(v) {}                                       // NOLINT
  Attribute(std::string v) : v_(std::move(v)) {}                      // NOLINT
  Attribute(const char* v) : v_(std::string(v)) {}                    // NOLINT
  Attribute(std::vector<int64_t> v) : v_(std::move(v)) {}             // NOLINT
  Attribute(std::vector<float> v) : v_(std::move(v)) {}               // NOLINT
  Attribute(std::vector<std::string> v) : v_(std::move(v)) {}         // NOLINT
  Attribute(Tensor v) : v_(std::move(v)) {}                           // NOLINT
  Attribute(std::shared_ptr<Graph> v) : v_(std::move(v)) {}           // NOLINT
  Attribute(std::vector<std::shared_ptr<Graph>> v) : v_(std::move(v)) {}  // NOLINT

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  const Storage& storage() const { return v_; }
  template <typename T> const T* get_if() const { return std::get_if<T>(&v_); }

 private:
  Storage v_;
};
std::string_view attribute_kind_name(Attribute::Kind k);

struct Node {
  std::string op_type;
  std::string name;
  std::string domain;            // "" = default ONNX domain
  std::vector<int> inputs;       // value indices; -1 = optional input left out
  std::vector<int> outputs;      // value indices; -1 = optional output not produced
  std::map<std::string, Attribute> attrs;

  // "node 'conv1' (Conv)" — how errors refer to a node.
  std::string describe() const;

  bool has_attr(const std::string& k) const { return attrs.count(k) != 0; }
  // Typed attribute access; a present attribute of the wrong kind is an error naming the node.
  int64_t attr_int(const std::string& k, int64_t def) const;
  int64_t attr_int(const std::string& k) const;  // required
  float attr_float(const std::string& k, float def) const;
  std::string attr_string(const std::string& k, const std::string& def) const;
  std::vector<int64_t> attr_ints(const std::string& k, std::vector<int64_t> def = {}) const;
  std::vector<float> attr_floats(const std::string& k, std::vector<float> def = {}) const;
  const Tensor* attr_tensor(const std::string& k) const;  // null if absent
  std::shared_ptr<Graph> attr_graph(const std::string& k) const;  // null if absent
};

struct Graph {
  std::string name;
  std::vector<Value> values;
  std::vector<Node> nodes;       // in topological order once the graph is valid
  std::vector<int> inputs;       // runtime inputs (value indices; never constants)
  std::vector<int> outputs;

  int find_value(const std::string& name) const;  // -1 if absent
  int add_value(Value v);                          // returns its index
  int add_constant(const std::string& name, Tensor t);
  const Value& value(int i) const { return values.at(static_cast<size_t>(i)); }
  Value& value(int i) { return values.at(static_cast<size_t>(i)); }

  // Structural checks: indices in range, each value produced once, nodes in topological
  // order, inputs not constant. Throws an Error naming the first problem (prefixed by `where`).
  void validate(const std::string& where) const;
  // Reorders nodes topologically (Kahn), a value that a node's subgraphs read by name counting
  // as one of its inputs; throws if there is a cycle.
  void topological_sort();
  // Parameter count: elements of all constant values that are float tensors of rank >= 1.
  int64_t parameter_count() const;
};

struct ModelMetadata {
  std::string producer;            // e.g. "pytorch 1.13" from the source model
  std::string source_sha256;       // hash of the file the model was converted from
  std::map<std::string, std::string> options;  // creation options, free-form
};

struct Model {
  Graph graph;
  int64_t opset = 13;              // default-domain op set version
  ModelMetadata metadata;
};

}  // namespace xnn
