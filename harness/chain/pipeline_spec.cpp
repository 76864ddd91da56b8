#include "harness/chain/pipeline_spec.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "engine/core/error.h"
#include "harness/config/experiment_config.h"

namespace xnn::chain {
namespace fs = std::filesystem;

std::string Step::describe() const {
  const char* kind_name = kind == Kind::kRun ? "run" : kind == Kind::kIf ? "if" : "loop";
  return "step " + std::to_string(index) + " (" + kind_name + ")";
}

namespace {

std::string describe_node(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "an empty value";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a map";
  return "'" + n.Scalar() + "'";
}

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  std::string at(const YAML::Node& n) const { return at(n.Mark()); }
  std::string at(const YAML::Mark& m) const {
    if (m.is_null()) return path_;
    return path_ + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
  }
  [[noreturn]] void fail(const YAML::Node& n, const std::string& msg) const { throw Error(at(n) + ": " + msg); }

  // The map's keys must be among `allowed`; `required` ones must be there.
  void check_map(const YAML::Node& map, const std::string& section, const std::vector<std::string>& allowed,
                 const std::vector<std::string>& required = {}) const {
    if (!map.IsMap()) fail(map, section + ": expected a map, got " + describe_node(map));
    std::set<std::string> seen;
    for (const auto& kv : map) {
      const std::string key = kv.first.Scalar();
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        const std::string best = config::did_you_mean(key, allowed);
        std::string list;
        for (const std::string& a : allowed) list += (list.empty() ? "" : ", ") + a;
        fail(kv.first, section + ": unknown key '" + key + "'" + (best.empty() ? "" : " (did you mean '" + best + "'?)") +
                           "; expected one of " + list);
      }
      if (!seen.insert(key).second) fail(kv.first, section + ": duplicate key '" + key + "'");
    }
    for (const std::string& r : required) {
      if (!map[r]) fail(map, section + ": missing required key '" + r + "'");
    }
  }

  std::string scalar(const YAML::Node& n, const std::string& what) const {
    if (!n.IsScalar() || n.Scalar().empty()) fail(n, what + ": expected a name, got " + describe_node(n));
    return n.Scalar();
  }

  int64_t integer(const YAML::Node& n, const std::string& what) const {
    const std::string s = n.IsScalar() ? n.Scalar() : "";
    int64_t v = 0;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size()) {
      fail(n, what + ": expected an integer, got " + describe_node(n));
    }
    return v;
  }

  Shape shape(const YAML::Node& n, const std::string& what) const {
    if (!n.IsSequence()) fail(n, what + ": expected a list of dims like [1, 3, 32, 32], got " + describe_node(n));
    Shape s;
    for (const auto& d : n) {
      const int64_t v = integer(d, what);
      if (v < 0) fail(d, what + ": dims must be >= 0, got " + std::to_string(v));
      s.push_back(v);
    }
    return s;
  }

  // `inputs: {MODEL_INPUT: VALUE, ...}`
  std::vector<Binding> bindings(const YAML::Node& n, const std::string& what) const {
    std::vector<Binding> out;
    if (!n) return out;
    if (!n.IsMap()) fail(n, what + ": expected a map of model input -> value, got " + describe_node(n));
    for (const auto& kv : n) {
      out.push_back(Binding{scalar(kv.first, what), scalar(kv.second, what + ": input '" + kv.first.Scalar() + "'"),
                            at(kv.second)});
    }
    return out;
  }

  // `run: MODEL` with optional `inputs:`, inside a step or a branch map.
  Call call(const YAML::Node& map, const char* model_key, const std::string& what) const {
    Call c;
    c.model = scalar(map[model_key], what + ": '" + model_key + "'");
    c.inputs = bindings(map["inputs"], what + ": inputs");
    c.where = at(map[model_key]);
    return c;
  }

  Condition condition(const YAML::Node& n, const std::string& what) const {
    const std::string text = n.IsScalar() ? n.Scalar() : "";
    const std::string expected = "expected 'VALUE OP NUMBER' with OP one of > >= < <= == != (e.g. 'gate.score > 0.5')";
    const size_t op_at = text.find_first_of("<>=!");
    if (text.empty() || op_at == std::string::npos) fail(n, what + ": " + expected + ", got " + describe_node(n));
    Condition c;
    c.where = at(n);
    c.value = trim(text.substr(0, op_at));
    size_t op_len = 1;
    for (const char* op : {">=", "<=", "==", "!="}) {
      if (text.compare(op_at, 2, op) == 0) op_len = 2;
    }
    c.op = text.substr(op_at, op_len);
    if (c.op == "=" || c.op == "!") fail(n, what + ": " + expected + ", got '" + text + "'");
    const std::string number = trim(text.substr(op_at + op_len));
    if (c.value.empty() || number.empty()) fail(n, what + ": " + expected + ", got '" + text + "'");
    std::istringstream in(number);
    in.imbue(std::locale::classic());
    in >> c.threshold;
    if (in.fail() || !in.eof()) fail(n, what + ": the threshold '" + number + "' is not a number");
    return c;
  }

 private:
  std::string path_;
};

Step parse_step(const Reader& r, const YAML::Node& n, int index) {
  Step s;
  s.index = index;
  s.where = r.at(n);
  const std::string what = "step " + std::to_string(index);
  if (!n.IsMap()) r.fail(n, what + ": expected a map with run, if or loop, got " + describe_node(n));
  const int kinds = (n["run"] ? 1 : 0) + (n["if"] ? 1 : 0) + (n["loop"] ? 1 : 0);
  if (kinds != 1) r.fail(n, what + ": needs exactly one of 'run', 'if' or 'loop'");
  if (n["run"]) {
    s.kind = Step::Kind::kRun;
    r.check_map(n, what + " (run)", {"run", "inputs", "as"});
    s.call = r.call(n, "run", what);
  } else if (n["if"]) {
    s.kind = Step::Kind::kIf;
    r.check_map(n, what + " (if)", {"if", "then", "else", "as"}, {"then"});
    s.cond = r.condition(n["if"], what + ": if");
    const YAML::Node then_n = n["then"];
    if (then_n.IsScalar()) {
      s.call = Call{r.scalar(then_n, what + ": then"), {}, r.at(then_n)};
    } else {
      r.check_map(then_n, what + ": then", {"run", "inputs"}, {"run"});
      s.call = r.call(then_n, "run", what + ": then");
    }
    const YAML::Node else_n = n["else"];
    s.else_where = else_n ? r.at(else_n) : s.where;
    if (!else_n || (else_n.IsScalar() && else_n.Scalar() == "zeros")) {
      s.else_kind = Step::Else::kZeros;
    } else if (else_n.IsMap()) {
      r.check_map(else_n, what + ": else", {"run", "inputs"}, {"run"});
      s.else_kind = Step::Else::kRun;
      s.else_call = r.call(else_n, "run", what + ": else");
    } else if (else_n.IsSequence()) {
      s.else_kind = Step::Else::kValues;
      for (const auto& v : else_n) s.else_values.push_back(r.scalar(v, what + ": else"));
    } else {
      r.fail(else_n, what + ": else: expected 'zeros', {run: MODEL, inputs: ...} or a list of values, got " +
                         describe_node(else_n));
    }
  } else {
    s.kind = Step::Kind::kLoop;
    r.check_map(n, what + " (loop)", {"loop", "over", "axis", "into", "inputs", "as"}, {"over"});
    s.call = r.call(n, "loop", what);
    s.over = r.scalar(n["over"], what + ": over");
    if (n["axis"]) s.axis = r.integer(n["axis"], what + ": axis");
    if (n["into"]) s.into = r.scalar(n["into"], what + ": into");
  }
  s.as = n["as"] ? r.scalar(n["as"], what + ": as") : s.call.model;
  if (s.as.find('.') != std::string::npos) r.fail(n["as"], what + ": as: '" + s.as + "' must not contain '.'");
  return s;
}

}  // namespace

PipelineSpec parse_pipeline(const std::string& yaml_text, const std::string& path) {
  const Reader r(path);
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw Error(r.at(e.mark) + ": not valid YAML: " + e.msg);
  }
  if (!root.IsMap()) throw Error(path + ": expected a map with models, inputs, steps and outputs");
  r.check_map(root, "pipeline", {"models", "inputs", "steps", "outputs"}, {"models", "inputs", "steps", "outputs"});
  PipelineSpec spec;
  spec.path = path;
  const fs::path folder = fs::path(path).parent_path();

  const YAML::Node models = root["models"];
  if (!models.IsMap() || models.size() == 0) r.fail(models, "models: expected a map of name -> model file");
  for (const auto& kv : models) {
    ModelRef m;
    m.name = r.scalar(kv.first, "models");
    if (m.name.find('.') != std::string::npos) r.fail(kv.first, "models: name '" + m.name + "' must not contain '.'");
    const std::string file = r.scalar(kv.second, "models: " + m.name);
    m.path = fs::path(file).is_absolute() ? file : (folder / file).string();
    m.where = r.at(kv.second);
    spec.models.push_back(m);
  }

  const YAML::Node inputs = root["inputs"];
  if (!inputs.IsSequence()) r.fail(inputs, "inputs: expected a list of {name, from} or {name, dtype, shape}");
  for (const auto& n : inputs) {
    r.check_map(n, "inputs", {"name", "from", "dtype", "shape"}, {"name"});
    PipelineInput in;
    in.name = r.scalar(n["name"], "inputs: name");
    in.where = r.at(n);
    if (n["from"]) {
      const std::string from = r.scalar(n["from"], "inputs: from");
      const size_t dot = from.find('.');
      if (dot == std::string::npos || dot == 0 || dot + 1 == from.size()) {
        r.fail(n["from"], "inputs: from: expected MODEL.INPUT, got '" + from + "'");
      }
      in.from_model = from.substr(0, dot);
      in.from_input = from.substr(dot + 1);
    }
    if (n["dtype"]) {
      in.dtype = dtype_from_name(r.scalar(n["dtype"], "inputs: dtype"));
      if (in.dtype == DType::kUnknown) {
        r.fail(n["dtype"], "inputs: dtype: expected f32, f16, f64, i8, u8, i32, i64 or bool, got " + describe_node(n["dtype"]));
      }
    }
    if (n["shape"]) in.shape = r.shape(n["shape"], "inputs: shape");
    if (in.from_model.empty() && (in.dtype == DType::kUnknown || !in.shape)) {
      r.fail(n, "inputs: '" + in.name + "' needs either from: MODEL.INPUT or both dtype and shape");
    }
    if (!in.from_model.empty() && in.dtype != DType::kUnknown) {
      r.fail(n["dtype"], "inputs: '" + in.name + "': dtype comes from '" + in.from_model + "." + in.from_input + "'");
    }
    spec.inputs.push_back(in);
  }

  const YAML::Node steps = root["steps"];
  if (!steps.IsSequence() || steps.size() == 0) r.fail(steps, "steps: expected a non-empty list of steps");
  int index = 0;
  for (const auto& n : steps) spec.steps.push_back(parse_step(r, n, ++index));

  const YAML::Node outputs = root["outputs"];
  if (!outputs.IsSequence() || outputs.size() == 0) r.fail(outputs, "outputs: expected a non-empty list of {name, from}");
  for (const auto& n : outputs) {
    PipelineOutput o;
    o.where = r.at(n);
    if (n.IsScalar()) {  // `- big.logits`: keeps the value's name
      o.name = o.from = r.scalar(n, "outputs");
    } else {
      r.check_map(n, "outputs", {"name", "from"}, {"name", "from"});
      o.name = r.scalar(n["name"], "outputs: name");
      o.from = r.scalar(n["from"], "outputs: from");
      o.where = r.at(n["from"]);
    }
    spec.outputs.push_back(o);
  }
  return spec;
}

PipelineSpec load_pipeline(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot read the pipeline file");
  std::stringstream text;
  text << f.rdbuf();
  return parse_pipeline(text.str(), path);
}

}  // namespace xnn::chain
