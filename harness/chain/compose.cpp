#include "harness/chain/compose.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>

#include "engine/core/error.h"
#include "engine/runtime/model_io.h"
#include "engine/runtime/session.h"
#include "harness/chain/graph_splice.h"
#include "harness/config/experiment_config.h"

namespace xnn::chain {
namespace {

struct TypeInfo {
  DType dtype = DType::kUnknown;
  Shape shape;
};

std::string type_str(const TypeInfo& t) { return std::string(dtype_name(t.dtype)) + " " + shape_str(t.shape); }
std::string type_str(const Value& v) {
  return std::string(dtype_name(v.dtype)) + " " + (v.has_shape ? dims_str(v.shape) : std::string("[?]"));
}

std::string list_str(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s.empty() ? "(none)" : s;
}

std::string suggest(const std::string& word, const std::vector<std::string>& candidates) {
  const std::string best = config::did_you_mean(word, candidates);
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

// A one-element constant of `dtype` holding `v` (integers must be whole numbers).
Tensor scalar_of(DType dtype, double v, const std::string& where) {
  const bool integral = std::floor(v) == v;
  auto need_integral = [&] {
    if (!integral) throw Error(where + ": the value is " + std::string(dtype_name(dtype)) + ", so the threshold must be a whole number");
  };
  switch (dtype) {
    case DType::kF32: return Tensor::scalar<float>(static_cast<float>(v));
    case DType::kF64: return Tensor::scalar<double>(v);
    case DType::kI64: need_integral(); return Tensor::scalar<int64_t>(static_cast<int64_t>(v));
    case DType::kI32: need_integral(); return Tensor::scalar<int32_t>(static_cast<int32_t>(v));
    case DType::kI8: need_integral(); return Tensor::scalar<int8_t>(static_cast<int8_t>(v));
    case DType::kU8: need_integral(); return Tensor::scalar<uint8_t>(static_cast<uint8_t>(v));
    default:
      throw Error(where + ": a condition compares a f32, f64 or integer value, not " + std::string(dtype_name(dtype)));
  }
}

// Declares `t` on value `v` (for graph inputs/outputs and subgraph seams).
void declare(Value& v, const TypeInfo& t) {
  v.dtype = t.dtype;
  v.has_shape = true;
  v.shape.clear();
  for (int64_t d : t.shape) v.shape.push_back(Dim::fixed(d));
}

class Composer {
 public:
  explicit Composer(const PipelineSpec& spec) : spec_(spec) {
    out_.graph.name = "chain";
    out_.metadata.producer = "xnn-lab chain";
    out_.metadata.options["pipeline"] = spec.path;
  }

  Model compose() {
    load_models();
    for (const PipelineInput& in : spec_.inputs) add_input(in);
    for (const Step& s : spec_.steps) {
      if (!prefixes_.insert(s.as).second) {
        throw Error(s.where + ": " + s.describe() + ": an earlier step already names its outputs '" + s.as +
                    ".*'; give this one another 'as:'");
      }
      switch (s.kind) {
        case Step::Kind::kRun: add_run(s); break;
        case Step::Kind::kIf: add_if(s); break;
        case Step::Kind::kLoop: add_loop(s); break;
      }
    }
    for (const PipelineOutput& o : spec_.outputs) add_output(o);
    Graph& g = out_.graph;
    g.topological_sort();
    g.validate(spec_.path);
    check_runs();
    return std::move(out_);
  }

 private:
  struct Loaded {
    std::shared_ptr<const Model> model;
    std::string where;
  };

  void load_models() {
    for (const ModelRef& m : spec_.models) {
      try {
        models_[m.name] = Loaded{load_model(m.path), m.where};
      } catch (const Error& e) {
        throw Error(m.where + ": model '" + m.name + "': " + e.what());
      }
      out_.opset = std::max(out_.opset, models_[m.name].model->opset);
    }
  }

  const Graph& model(const std::string& name, const std::string& where, const Step& step) {
    auto it = models_.find(name);
    if (it == models_.end()) {
      std::vector<std::string> names;
      for (const ModelRef& m : spec_.models) names.push_back(m.name);
      throw Error(where + ": " + step.describe() + ": unknown model '" + name + "'" + suggest(name, names) +
                  "; the models are: " + list_str(names));
    }
    return it->second.model->graph;
  }

  // The main-graph value `name`, known to the pipeline (a bundle input or a step's output).
  int value(const std::string& name, const std::string& where, const std::string& context) {
    auto it = types_.find(name);
    if (it == types_.end()) {
      throw Error(where + ": " + context + ": '" + name + "' is not a value of the pipeline" + suggest(name, names_) +
                  "; the values so far are: " + list_str(names_));
    }
    return out_.graph.find_value(name);
  }

  // A new main-graph value; its name must be new.
  int new_value(const std::string& name, const TypeInfo& t, const std::string& where, const std::string& context) {
    if (types_.count(name)) throw Error(where + ": " + context + ": '" + name + "' is already a value of the pipeline (use 'as:' to rename)");
    Value v;
    v.name = name;
    declare(v, t);
    types_[name] = t;
    names_.push_back(name);
    return out_.graph.add_value(std::move(v));
  }

  void add_input(const PipelineInput& in) {
    TypeInfo t;
    if (!in.from_model.empty()) {
      auto it = models_.find(in.from_model);
      if (it == models_.end()) {
        std::vector<std::string> names;
        for (const ModelRef& m : spec_.models) names.push_back(m.name);
        throw Error(in.where + ": input '" + in.name + "': unknown model '" + in.from_model + "'" +
                    suggest(in.from_model, names) + "; the models are: " + list_str(names));
      }
      const Graph& mg = it->second.model->graph;
      const Value* src = nullptr;
      std::vector<std::string> inputs;
      for (int i : mg.inputs) {
        inputs.push_back(mg.value(i).name);
        if (mg.value(i).name == in.from_input) src = &mg.value(i);
      }
      if (!src) {
        throw Error(in.where + ": input '" + in.name + "': model '" + in.from_model + "' has no input '" + in.from_input +
                    "'" + suggest(in.from_input, inputs) + "; its inputs are: " + list_str(inputs));
      }
      t.dtype = src->dtype;
      if (in.shape) {
        t.shape = *in.shape;
      } else {
        if (!src->has_shape || !src->shape_fully_known()) {
          throw Error(in.where + ": input '" + in.name + "': " + in.from_model + "." + in.from_input + " has shape " +
                      (src->has_shape ? dims_str(src->shape) : std::string("[?]")) +
                      " with unknown dims; give the bundle's with shape: [...]");
        }
        t.shape = src->static_shape();
      }
    } else {
      t.dtype = in.dtype;
      t.shape = *in.shape;
    }
    out_.graph.inputs.push_back(new_value(in.name, t, in.where, "input '" + in.name + "'"));
  }

  // Checks a seam: model input `mi` gets a value of type `t`.
  static void check_seam(const Value& mi, const TypeInfo& t, const std::string& value_name, const std::string& where,
                         const Step& step, const std::string& model_name) {
    bool ok = mi.dtype == DType::kUnknown || mi.dtype == t.dtype;
    if (ok && mi.has_shape) {
      ok = mi.shape.size() == t.shape.size();
      for (size_t d = 0; ok && d < mi.shape.size(); ++d) ok = !mi.shape[d].known() || mi.shape[d].value == t.shape[d];
    }
    if (!ok) {
      throw Error(where + ": " + step.describe() + ": model '" + model_name + "' input '" + mi.name + "' expects " +
                  type_str(mi) + ", but '" + value_name + "' is " + type_str(t));
    }
  }

  // The main-graph values feeding `model_name`'s inputs, in the model's input order; `skip`
  // (the loop's slice input) is left at -1.
  struct Bound {
    std::vector<int> values;        // main-graph value per model input (-1: skipped)
    std::vector<TypeInfo> types;    // their types
  };
  Bound bind(const Call& call, const Step& step, const std::string& skip = "") {
    const Graph& mg = model(call.model, call.where, step);
    std::vector<std::string> inputs;
    for (int i : mg.inputs) inputs.push_back(mg.value(i).name);
    for (const Binding& b : call.inputs) {
      if (std::find(inputs.begin(), inputs.end(), b.model_input) == inputs.end()) {
        throw Error(b.where + ": " + step.describe() + ": model '" + call.model + "' has no input '" + b.model_input +
                    "'" + suggest(b.model_input, inputs) + "; its inputs are: " + list_str(inputs));
      }
      if (b.model_input == skip) {
        throw Error(b.where + ": " + step.describe() + ": input '" + b.model_input + "' is fed the slices of the loop");
      }
    }
    Bound out;
    for (int i : mg.inputs) {
      const Value& mi = mg.value(i);
      if (mi.name == skip) {
        out.values.push_back(-1);
        out.types.push_back(TypeInfo{});
        continue;
      }
      auto b = std::find_if(call.inputs.begin(), call.inputs.end(), [&](const Binding& x) { return x.model_input == mi.name; });
      std::string name, where = call.where;
      if (b != call.inputs.end()) {
        name = b->value;
        where = b->where;
      } else if (types_.count(mi.name)) {
        name = mi.name;  // a pipeline value of the same name
      } else {
        throw Error(call.where + ": " + step.describe() + ": model '" + call.model + "' input '" + mi.name +
                    "' is not bound; add inputs: {" + mi.name + ": VALUE}");
      }
      const int v = value(name, where, step.describe());
      check_seam(mi, types_.at(name), name, where, step, call.model);
      out.values.push_back(v);
      out.types.push_back(types_.at(name));
    }
    return out;
  }

  // dtype and shape of the model's outputs for inputs of these types: from its static plan, or
  // by running it on zeros when its shapes depend on values.
  std::vector<TypeInfo> output_types(const Call& call, const std::vector<TypeInfo>& inputs, const Step& step) {
    const Loaded& m = models_.at(call.model);
    try {
      Session s(m.model);
      std::map<std::string, Shape> shapes;
      std::map<std::string, Tensor> zeros;
      for (size_t k = 0; k < inputs.size(); ++k) {
        const std::string& name = s.inputs()[k].name;
        shapes[name] = inputs[k].shape;
        zeros[name] = Tensor(inputs[k].dtype, inputs[k].shape);
      }
      s.prepare(shapes);
      std::vector<TypeInfo> out;
      std::vector<TensorInfo> infos = s.output_infos();
      if (infos.empty()) {
        for (const Tensor& t : s.run(zeros)) out.push_back(TypeInfo{t.dtype(), t.shape()});
      } else {
        for (const TensorInfo& t : infos) out.push_back(TypeInfo{t.dtype, t.shape});
      }
      return out;
    } catch (const Error& e) {
      throw Error(call.where + ": " + step.describe() + ": model '" + call.model + "' does not run on its inputs: " + e.what());
    }
  }

  std::vector<std::string> output_names(const std::string& model_name) const {
    std::vector<std::string> names;
    const Graph& mg = models_.at(model_name).model->graph;
    for (int o : mg.outputs) names.push_back(mg.value(o).name);
    return names;
  }

  // splice_graph, its errors (a name clash) naming the step.
  static std::vector<int> splice(const Step& step, Graph& target, const Graph& source, const std::vector<int>& bind,
                                 const std::string& prefix) {
    try {
      return splice_graph(target, source, bind, prefix);
    } catch (const Error& e) {
      throw Error(step.where + ": " + step.describe() + ": " + e.what());
    }
  }

  Node& add_node(Graph& g, const std::string& op, const std::string& name, std::vector<int> ins, std::vector<int> outs,
                 std::map<std::string, Attribute> attrs = {}) {
    Node n;
    n.op_type = op;
    n.name = name;
    n.inputs = std::move(ins);
    n.outputs = std::move(outs);
    n.attrs = std::move(attrs);
    g.nodes.push_back(std::move(n));
    return g.nodes.back();
  }

  // Names the step's outputs <as>.<model output>: Identity nodes in the main graph, which the
  // session's optimiser removes again.
  void publish(const Step& step, const std::string& model_name, const std::vector<int>& values,
               const std::vector<TypeInfo>& types) {
    const std::vector<std::string> names = output_names(model_name);
    for (size_t k = 0; k < names.size(); ++k) {
      const int out = new_value(step.as + "." + names[k], types[k], step.where, step.describe());
      add_node(out_.graph, "Identity", step.as + "/output/" + names[k], {values[k]}, {out});
    }
  }

  void add_run(const Step& step) {
    const Bound b = bind(step.call, step);
    const std::vector<TypeInfo> types = output_types(step.call, b.types, step);
    const std::vector<int> outs = splice(step, out_.graph, model(step.call.model, step.call.where, step), b.values, step.as + "/");
    publish(step, step.call.model, outs, types);
  }

  // `bound` main-graph values as outer-scope values of subgraph `sub` (one per name).
  static std::vector<int> outer_values(Graph& sub, const Graph& main, const std::vector<int>& bound) {
    std::vector<int> out;
    for (int v : bound) {
      const std::string& name = main.value(v).name;
      int i = sub.find_value(name);
      if (i < 0) {
        Value val;
        val.name = name;
        val.outer_scope = true;
        i = sub.add_value(std::move(val));
      }
      out.push_back(i);
    }
    return out;
  }

  // A branch running `call`: returns the branch graph and its output types.
  std::shared_ptr<Graph> branch_running(const Call& call, const Step& step, const std::string& prefix,
                                        std::vector<TypeInfo>& types) {
    const Bound b = bind(call, step);
    types = output_types(call, b.types, step);
    auto g = std::make_shared<Graph>();
    g->name = prefix;
    const std::vector<int> bound = outer_values(*g, out_.graph, b.values);
    g->outputs = splice(step, *g, model(call.model, call.where, step), bound, prefix + "/");
    for (size_t k = 0; k < g->outputs.size(); ++k) {
      Value& v = g->value(g->outputs[k]);
      if (!v.outer_scope && !v.is_constant()) declare(v, types[k]);
    }
    return g;
  }

  // `cond.value OP threshold` as a bool scalar in the main graph.
  int condition(const Step& step) {
    const Condition& c = step.cond;
    const int v = value(c.value, c.where, step.describe() + ": if");
    const TypeInfo& t = types_.at(c.value);
    if (shape_numel(t.shape) != 1) {
      throw Error(c.where + ": " + step.describe() + ": the condition needs a one-element value, but '" + c.value +
                  "' is " + type_str(t));
    }
    Graph& g = out_.graph;
    const int threshold = g.add_constant(step.as + "/threshold", scalar_of(t.dtype, c.threshold, c.where + ": " + step.describe()));
    static const std::map<std::string, const char*> kOps = {{">", "Greater"}, {">=", "GreaterOrEqual"}, {"<", "Less"},
                                                             {"<=", "LessOrEqual"}, {"==", "Equal"}, {"!=", "Equal"}};
    TypeInfo cmp_t{DType::kBool, t.shape};
    const int cmp = new_value(step.as + "/compare", cmp_t, c.where, step.describe());
    add_node(g, kOps.at(c.op), step.as + "/compare", {v, threshold}, {cmp});
    int flag = cmp;
    if (c.op == "!=") {
      flag = new_value(step.as + "/not_equal", cmp_t, c.where, step.describe());
      add_node(g, "Not", step.as + "/not", {cmp}, {flag});
    }
    const int scalar_shape = g.add_constant(step.as + "/scalar_shape", Tensor(DType::kI64, {0}));
    const int cond = new_value(step.as + "/cond", TypeInfo{DType::kBool, {}}, c.where, step.describe());
    add_node(g, "Reshape", step.as + "/to_scalar", {flag, scalar_shape}, {cond});
    return cond;
  }

  void add_if(const Step& step) {
    const int cond = condition(step);
    std::vector<TypeInfo> then_types;
    std::shared_ptr<Graph> then_g = branch_running(step.call, step, step.as + "/then", then_types);
    const std::vector<std::string> names = output_names(step.call.model);
    auto else_g = std::make_shared<Graph>();
    else_g->name = step.as + "/else";
    switch (step.else_kind) {
      case Step::Else::kZeros:
        for (size_t k = 0; k < then_types.size(); ++k) {
          else_g->outputs.push_back(else_g->add_constant(step.as + "/else/" + names[k], Tensor(then_types[k].dtype, then_types[k].shape)));
        }
        break;
      case Step::Else::kRun: {
        std::vector<TypeInfo> else_types;
        else_g = branch_running(step.else_call, step, step.as + "/else", else_types);
        check_branches(step, then_types, else_types, output_names(step.else_call.model), step.else_call.where);
        break;
      }
      case Step::Else::kValues: {
        std::vector<int> vals;
        std::vector<TypeInfo> else_types;
        for (const std::string& name : step.else_values) {
          vals.push_back(value(name, step.else_where, step.describe() + ": else"));
          else_types.push_back(types_.at(name));
        }
        check_branches(step, then_types, else_types, step.else_values, step.else_where);
        else_g->outputs = outer_values(*else_g, out_.graph, vals);
        break;
      }
    }
    std::vector<int> outs;
    for (size_t k = 0; k < names.size(); ++k) outs.push_back(new_value(step.as + "." + names[k], then_types[k], step.where, step.describe()));
    add_node(out_.graph, "If", step.as + "/if", {cond}, outs, {{"then_branch", then_g}, {"else_branch", else_g}});
  }

  void check_branches(const Step& step, const std::vector<TypeInfo>& then_types, const std::vector<TypeInfo>& else_types,
                      const std::vector<std::string>& else_names, const std::string& where) {
    if (then_types.size() != else_types.size()) {
      throw Error(where + ": " + step.describe() + ": the else-branch gives " + std::to_string(else_types.size()) +
                  " outputs, the then-branch (model '" + step.call.model + "') " + std::to_string(then_types.size()));
    }
    for (size_t k = 0; k < then_types.size(); ++k) {
      if (then_types[k].dtype != else_types[k].dtype || then_types[k].shape != else_types[k].shape) {
        throw Error(where + ": " + step.describe() + ": else-branch output " + std::to_string(k) + " '" + else_names[k] +
                    "' is " + type_str(else_types[k]) + ", but the then-branch (model '" + step.call.model + "') gives " +
                    type_str(then_types[k]));
      }
    }
  }

  void add_loop(const Step& step) {
    const Graph& mg = model(step.call.model, step.call.where, step);
    // The model input fed the slices: `into`, or the only one not bound explicitly.
    std::string into = step.into;
    std::vector<std::string> unbound;
    for (int i : mg.inputs) {
      const std::string& name = mg.value(i).name;
      const bool bound = std::any_of(step.call.inputs.begin(), step.call.inputs.end(),
                                     [&](const Binding& b) { return b.model_input == name; });
      if (!bound) unbound.push_back(name);
    }
    if (into.empty()) {
      if (unbound.size() != 1) {
        throw Error(step.where + ": " + step.describe() + ": model '" + step.call.model + "' has inputs " +
                    list_str(unbound) + " not bound: say which one gets the slices with into: INPUT");
      }
      into = unbound[0];
    } else if (std::find(unbound.begin(), unbound.end(), into) == unbound.end()) {
      std::vector<std::string> inputs;
      for (int i : mg.inputs) inputs.push_back(mg.value(i).name);
      throw Error(step.where + ": " + step.describe() + ": into: model '" + step.call.model + "' has no input '" + into +
                  "'" + suggest(into, inputs) + "; its inputs are: " + list_str(inputs));
    }
    const int over = value(step.over, step.where, step.describe() + ": over");
    const TypeInfo over_t = types_.at(step.over);
    const int rank = static_cast<int>(over_t.shape.size());
    const int64_t axis = step.axis < 0 ? step.axis + rank : step.axis;
    if (axis < 0 || axis >= rank) {
      throw Error(step.where + ": " + step.describe() + ": axis " + std::to_string(step.axis) + " is out of range for '" +
                  step.over + "' (" + type_str(over_t) + ")");
    }
    const int64_t count = over_t.shape[static_cast<size_t>(axis)];
    TypeInfo item_t = over_t;
    item_t.shape[static_cast<size_t>(axis)] = 1;
    Bound b = bind(step.call, step, into);
    size_t into_k = 0;
    for (size_t k = 0; k < mg.inputs.size(); ++k) {
      if (mg.value(mg.inputs[k]).name == into) into_k = k;
    }
    check_seam(mg.value(mg.inputs[into_k]), item_t, step.over + " (one slice along axis " + std::to_string(axis) + ")",
               step.where, step, step.call.model);
    b.types[into_k] = item_t;
    const std::vector<TypeInfo> types = output_types(step.call, b.types, step);

    // The body: slice -> Unsqueeze(axis) -> the model -> Squeeze(axis) where the output allows.
    auto body = std::make_shared<Graph>();
    body->name = step.as + "/body";
    TypeInfo slice_t = over_t;
    slice_t.shape.erase(slice_t.shape.begin() + axis);
    Value slice;
    slice.name = step.as + "/slice";
    declare(slice, slice_t);
    body->inputs.push_back(body->add_value(std::move(slice)));
    const int axes = body->add_constant(step.as + "/axes", Tensor::from_vector<int64_t>({axis}, {1}));
    Value item;
    item.name = step.as + "/item";
    declare(item, item_t);
    const int item_v = body->add_value(std::move(item));
    add_node(*body, "Unsqueeze", step.as + "/unsqueeze", {body->inputs[0], axes}, {item_v});
    std::vector<int> others;
    for (int v : b.values) {
      if (v >= 0) others.push_back(v);
    }
    const std::vector<int> outer = outer_values(*body, out_.graph, others);
    std::vector<int> bound;
    for (size_t k = 0, o = 0; k < b.values.size(); ++k) bound.push_back(b.values[k] < 0 ? item_v : outer[o++]);
    const std::vector<int> model_outs = splice(step, *body, mg, bound, step.as + "/body/");
    const std::vector<std::string> names = output_names(step.call.model);
    std::vector<int64_t> out_axes;
    std::vector<int> outs;
    for (size_t k = 0; k < model_outs.size(); ++k) {
      const TypeInfo& t = types[k];
      TypeInfo final_t = t;
      int scan_out = model_outs[k];
      if (static_cast<int64_t>(t.shape.size()) > axis && t.shape[static_cast<size_t>(axis)] == 1) {
        TypeInfo squeezed = t;
        squeezed.shape.erase(squeezed.shape.begin() + axis);
        Value v;
        v.name = step.as + "/squeezed/" + names[k];
        declare(v, squeezed);
        scan_out = body->add_value(std::move(v));
        add_node(*body, "Squeeze", step.as + "/squeeze/" + names[k], {model_outs[k], axes}, {scan_out});
        final_t.shape[static_cast<size_t>(axis)] = count;
        out_axes.push_back(axis);
      } else {
        final_t.shape.insert(final_t.shape.begin(), count);
        out_axes.push_back(0);
        Value& v = body->value(scan_out);
        if (!v.outer_scope && !v.is_constant()) declare(v, t);
      }
      body->outputs.push_back(scan_out);
      outs.push_back(new_value(step.as + "." + names[k], final_t, step.where, step.describe()));
    }
    add_node(out_.graph, "Scan", step.as + "/scan", {over}, outs,
             {{"body", body},
              {"num_scan_inputs", int64_t{1}},
              {"scan_input_axes", std::vector<int64_t>{axis}},
              {"scan_output_axes", out_axes}});
  }

  void add_output(const PipelineOutput& o) {
    const int v = value(o.from, o.where, "output '" + o.name + "'");
    Graph& g = out_.graph;
    for (int existing : g.outputs) {
      if (g.value(existing).name == o.name) throw Error(o.where + ": output '" + o.name + "' is given twice");
    }
    if (o.name == o.from) {
      g.outputs.push_back(v);
      return;
    }
    const int out = new_value(o.name, types_.at(o.from), o.where, "output '" + o.name + "'");
    add_node(g, "Identity", "output/" + o.name, {v}, {out});
    g.outputs.push_back(out);
  }

  // The bundle must prepare like any model: catches what the seams cannot (an op the engine
  // lacks inside a branch, a body that does not infer).
  void check_runs() {
    auto model = std::make_shared<Model>(out_);
    try {
      Session s(model);
      s.prepare();
    } catch (const Error& e) {
      throw Error(spec_.path + ": the composed graph does not prepare: " + e.what());
    }
  }

  const PipelineSpec& spec_;
  Model out_;
  std::map<std::string, Loaded> models_;
  std::map<std::string, TypeInfo> types_;  // main-graph values the pipeline may name
  std::vector<std::string> names_;         // the same, in order (for messages)
  std::set<std::string> prefixes_;         // the steps' `as` names
};

}  // namespace

Model compose_pipeline(const PipelineSpec& spec) { return Composer(spec).compose(); }

}  // namespace xnn::chain
