#include "engine/core/graph.h"

#include <deque>
#include <unordered_map>

namespace xnn {
namespace {

// Names that the subgraphs of `n` (at any depth) read from enclosing graphs.
void collect_subgraph_reads(const Node& n, std::vector<std::string>& names) {
  auto visit = [&](const Graph& sub) {
    for (const Value& v : sub.values) {
      if (v.outer_scope) names.push_back(v.name);
    }
    for (const Node& inner : sub.nodes) collect_subgraph_reads(inner, names);
  };
  for (const auto& [key, attr] : n.attrs) {
    if (auto g = attr.get_if<std::shared_ptr<Graph>>()) {
      if (*g) visit(**g);
    } else if (auto gs = attr.get_if<std::vector<std::shared_ptr<Graph>>>()) {
      for (const auto& sub : *gs) {
        if (sub) visit(*sub);
      }
    }
  }
}

}  // namespace

std::string dims_str(const std::vector<Dim>& dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) out += ",";
    out += dims[i].known() ? std::to_string(dims[i].value) : (dims[i].symbol.empty() ? "?" : dims[i].symbol);
  }
  return out + "]";
}

Shape Value::static_shape() const {
  if (!has_shape) throw Error("value '" + name + "' has no known shape");
  Shape s;
  s.reserve(shape.size());
  for (const Dim& d : shape) {
    if (!d.known()) throw Error("value '" + name + "' has a non-static shape " + dims_str(shape));
    s.push_back(d.value);
  }
  return s;
}

bool Value::shape_fully_known() const {
  if (!has_shape) return false;
  for (const Dim& d : shape) {
    if (!d.known()) return false;
  }
  return true;
}

std::string_view attribute_kind_name(Attribute::Kind k) {
  switch (k) {
    case Attribute::Kind::kInt: return "int";
    case Attribute::Kind::kFloat: return "float";
    case Attribute::Kind::kString: return "string";
    case Attribute::Kind::kInts: return "ints";
    case Attribute::Kind::kFloats: return "floats";
    case Attribute::Kind::kStrings: return "strings";
    case Attribute::Kind::kTensor: return "tensor";
    case Attribute::Kind::kGraph: return "graph";
    case Attribute::Kind::kGraphs: return "graphs";
  }
  return "?";
}

std::string Node::describe() const {
  return "node '" + name + "' (" + (domain.empty() ? "" : domain + ".") + op_type + ")";
}

namespace {
[[noreturn]] void wrong_kind(const Node& n, const std::string& k, const char* want, const Attribute& a) {
  throw Error(n.describe() + ": attribute '" + k + "' should be " + want + ", got " +
              std::string(attribute_kind_name(a.kind())));
}
}  // namespace

int64_t Node::attr_int(const std::string& k, int64_t def) const {
  auto it = attrs.find(k);
  if (it == attrs.end()) return def;
  if (auto p = it->second.get_if<int64_t>()) return *p;
  wrong_kind(*this, k, "an int", it->second);
}

int64_t Node::attr_int(const std::string& k) const {
  auto it = attrs.find(k);
  if (it == attrs.end()) throw Error(describe() + ": required attribute '" + k + "' is missing");
  return attr_int(k, 0);
}

float Node::attr_float(const std::string& k, float def) const {
  auto it = attrs.find(k);
  if (it == attrs.end()) return def;
  if (auto p = it->second.get_if<float>()) return *p;
  if (auto p = it->second.get_if<int64_t>()) return static_cast<float>(*p);
  wrong_kind(*this, k, "a float", it->second);
}

std::string Node::attr_string(const std::string& k, const std::string& def) const {
  auto it = attrs.find(k);
  if (it == attrs.end()) return def;
  if (auto p = it->second.get_if<std::string>()) return *p;
  wrong_kind(*this, k, "a string", it->second);
}

std::vector<int64_t> Node::attr_ints(const std::string& k, std::vector<int64_t> def) const {
  auto it = attrs.find(k);
  if (it == attrs.end()) return def;
  if (auto p = it->second.get_if<std::vector<int64_t>>()) return *p;
  wrong_kind(*this, k, "a list of ints", it->second);
}

std::vector<float> Node::attr_floats(const std::string& k, std::vector<float> def) const {
  auto it = attrs.find(k);
  if (it == attrs.end()) return def;
  if (auto p = it->second.get_if<std::vector<float>>()) return *p;
  wrong_kind(*this, k, "a list of floats", it->second);
}

const Tensor* Node::attr_tensor(const std::string& k) const {
  auto it = attrs.find(k);
  if (it == attrs.end()) return nullptr;
  if (auto p = it->second.get_if<Tensor>()) return p;
  wrong_kind(*this, k, "a tensor", it->second);
}

std::shared_ptr<Graph> Node::attr_graph(const std::string& k) const {
  auto it = attrs.find(k);
  if (it == attrs.end()) return nullptr;
  if (auto p = it->second.get_if<std::shared_ptr<Graph>>()) return *p;
  wrong_kind(*this, k, "a graph", it->second);
}

int Graph::find_value(const std::string& n) const {
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i].name == n) return static_cast<int>(i);
  }
  return -1;
}

int Graph::add_value(Value v) {
  values.push_back(std::move(v));
  return static_cast<int>(values.size() - 1);
}

int Graph::add_constant(const std::string& n, Tensor t) {
  Value v;
  v.name = n;
  v.dtype = t.dtype();
  v.has_shape = true;
  for (int64_t d : t.shape()) v.shape.push_back(Dim::fixed(d));
  v.data = std::move(t);
  return add_value(std::move(v));
}

void Graph::validate(const std::string& where) const {
  const std::string pre = where.empty() ? "" : where + ": ";
  const int nv = static_cast<int>(values.size());
  std::vector<char> defined(values.size(), 0);
  auto in_range = [&](int i) { return i >= 0 && i < nv; };
  for (int i : inputs) {
    if (!in_range(i)) throw Error(pre + "graph input index " + std::to_string(i) + " out of range");
    if (values[static_cast<size_t>(i)].is_constant())
      throw Error(pre + "graph input '" + values[static_cast<size_t>(i)].name + "' is also a constant");
    defined[static_cast<size_t>(i)] = 1;
  }
  for (int i = 0; i < nv; ++i) {
    if (values[static_cast<size_t>(i)].is_constant() || values[static_cast<size_t>(i)].outer_scope)
      defined[static_cast<size_t>(i)] = 1;
  }
  for (const Node& n : nodes) {
    for (int i : n.inputs) {
      if (i == -1) continue;
      if (!in_range(i)) throw Error(pre + n.describe() + ": input index " + std::to_string(i) + " out of range");
      if (!defined[static_cast<size_t>(i)])
        throw Error(pre + n.describe() + ": input '" + values[static_cast<size_t>(i)].name +
                    "' is not produced before it is used (graph not in topological order, or dangling)");
    }
    for (int o : n.outputs) {
      if (o == -1) continue;
      if (!in_range(o)) throw Error(pre + n.describe() + ": output index " + std::to_string(o) + " out of range");
      if (defined[static_cast<size_t>(o)])
        throw Error(pre + n.describe() + ": output '" + values[static_cast<size_t>(o)].name +
                    "' is already produced elsewhere");
      defined[static_cast<size_t>(o)] = 1;
    }
  }
  for (int o : outputs) {
    if (!in_range(o)) throw Error(pre + "graph output index " + std::to_string(o) + " out of range");
    if (!defined[static_cast<size_t>(o)])
      throw Error(pre + "graph output '" + values[static_cast<size_t>(o)].name + "' is never produced");
  }
}

void Graph::topological_sort() {
  const size_t nn = nodes.size();
  std::unordered_map<int, size_t> producer;
  for (size_t k = 0; k < nn; ++k) {
    for (int o : nodes[k].outputs) {
      if (o >= 0) producer[o] = k;
    }
  }
  std::vector<int> pending(nn, 0);
  std::vector<std::vector<size_t>> consumers(nn);
  // A node depends on its inputs' producers, and on the producers of the values its subgraphs
  // read by name (an If branch reading a value computed here must run after it).
  std::unordered_map<std::string, int> by_name;
  std::vector<std::string> implicit;
  for (size_t k = 0; k < nn; ++k) {
    std::vector<int> reads = nodes[k].inputs;
    implicit.clear();
    collect_subgraph_reads(nodes[k], implicit);
    if (!implicit.empty() && by_name.empty()) {
      for (size_t v = 0; v < values.size(); ++v) by_name.emplace(values[v].name, static_cast<int>(v));
    }
    for (const std::string& name : implicit) {
      auto it = by_name.find(name);
      if (it != by_name.end()) reads.push_back(it->second);
    }
    for (int i : reads) {
      auto it = producer.find(i);
      if (i >= 0 && it != producer.end()) {
        ++pending[k];
        consumers[it->second].push_back(k);
      }
    }
  }
  std::deque<size_t> ready;
  for (size_t k = 0; k < nn; ++k) {
    if (pending[k] == 0) ready.push_back(k);
  }
  std::vector<Node> sorted;
  sorted.reserve(nn);
  while (!ready.empty()) {
    size_t k = ready.front();
    ready.pop_front();
    for (size_t c : consumers[k]) {
      if (--pending[c] == 0) ready.push_back(c);
    }
    sorted.push_back(std::move(nodes[k]));
  }
  if (sorted.size() != nn) throw Error("graph '" + name + "' has a cycle");
  nodes = std::move(sorted);
}

int64_t Graph::parameter_count() const {
  int64_t n = 0;
  for (const Value& v : values) {
    if (v.is_constant() && is_float(v.data->dtype()) && v.data->rank() >= 1) n += v.data->numel();
  }
  return n;
}

}  // namespace xnn
