#include "compress/channel/channel_groups.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <sstream>

#include "engine/core/error.h"
#include "engine/runtime/graph_cost.h"

namespace xnn::channel {

int ChannelGroup::producers() const {
  int n = 0;
  for (const Member& m : members) n += m.role == MemberRole::kProducer && m.kind == ParamKind::kWeight;
  return n;
}

int ChannelAnalysis::prunable_count() const {
  int n = 0;
  for (const ChannelGroup& g : groups) n += g.prunable;
  return n;
}

int64_t ChannelAnalysis::channels_of(int value) const {
  int64_t c = 0;
  for (const Segment& s : layout.at(static_cast<size_t>(value))) c += s.count;
  return c;
}

namespace {

using Layout = std::vector<Segment>;

// Ops that map each channel to itself (elementwise on one tensor, spatial pooling). Extra
// inputs (Clip's min/max) are scalars.
const std::set<std::string> kChannelwiseUnary = {
    "Relu", "Clip", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Elu", "Selu",
    "Softplus", "Softsign", "Gelu", "Mish", "Identity", "Dropout", "MaxPool", "AveragePool",
    "GlobalAveragePool", "GlobalMaxPool", "LpPool", "Abs", "Neg", "Exp", "Sqrt", "Erf", "Cast",
    "Celu", "ThresholdedRelu", "Floor", "Ceil", "Round", "Reciprocal", "Log", "Sin", "Cos"};
const std::set<std::string> kElementwiseBinary = {"Add", "Sub", "Mul", "Div", "Max", "Min", "Sum", "Mean", "PRelu"};
const std::set<std::string> kReduce = {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceSum", "ReduceL2", "ReduceL1"};

class Analyzer {
 public:
  Analyzer(const Graph& g, const std::map<std::string, Shape>& input_shapes) : g_(g) {
    const GraphCost cost = estimate_graph_cost(g, input_shapes);
    shape_.assign(g.values.size(), {});
    has_shape_.assign(g.values.size(), 0);
    for (size_t i = 0; i < g.values.size(); ++i) {
      if (g.values[i].is_constant()) set_shape(static_cast<int>(i), g.values[i].data->shape());
    }
    for (int i : g.inputs) set_shape(i, concrete_input_shape(g.value(i), input_shapes));
    for (const NodeCost& nc : cost.nodes) {
      const Node& n = g.nodes[nc.node_index];
      for (size_t j = 0; j < n.inputs.size() && j < nc.input_shapes.size(); ++j)
        if (n.inputs[j] >= 0 && !has_shape_[static_cast<size_t>(n.inputs[j])]) set_shape(n.inputs[j], nc.input_shapes[j]);
      for (size_t j = 0; j < n.outputs.size() && j < nc.output_shapes.size(); ++j)
        if (n.outputs[j] >= 0) set_shape(n.outputs[j], nc.output_shapes[j]);
    }
    result_.layout.assign(g.values.size(), {});
    result_.cost_values.assign(g.nodes.size(), {});
  }

  ChannelAnalysis run() {
    for (int i : g_.inputs) {
      if (rank(i) >= 2) {
        const int grp = new_group(dim(i, 1), g_.value(i).name);
        fix(grp, "graph input '" + g_.value(i).name + "'");
        result_.layout[static_cast<size_t>(i)] = {Segment{grp, dim(i, 1), 1}};
      }
    }
    for (size_t k = 0; k < g_.nodes.size(); ++k) visit(static_cast<int>(k));
    for (int o : g_.outputs) {
      for (const Segment& s : layout(o)) fix(s.group, "graph output '" + g_.value(o).name + "'");
    }
    return finish();
  }

 private:
  // ---- shapes -----------------------------------------------------------------------------
  void set_shape(int v, const Shape& s) {
    shape_[static_cast<size_t>(v)] = s;
    has_shape_[static_cast<size_t>(v)] = 1;
  }
  int rank(int v) const {
    return v >= 0 && has_shape_[static_cast<size_t>(v)] ? static_cast<int>(shape_[static_cast<size_t>(v)].size()) : -1;
  }
  int64_t dim(int v, int axis) const { return shape_[static_cast<size_t>(v)].at(static_cast<size_t>(axis)); }
  bool is_const(int v) const { return v >= 0 && g_.value(v).is_constant(); }
  const Layout& layout(int v) const { return result_.layout[static_cast<size_t>(v)]; }
  Layout& layout(int v) { return result_.layout[static_cast<size_t>(v)]; }

  // ---- groups (union-find over raw group ids) ----------------------------------------------
  int new_group(int64_t channels, const std::string& name) {
    parent_.push_back(static_cast<int>(parent_.size()));
    raw_.push_back(ChannelGroup{});
    raw_.back().channels = channels;
    raw_.back().name = name;
    return static_cast<int>(parent_.size()) - 1;
  }
  int find(int a) {
    while (parent_[static_cast<size_t>(a)] != a) a = parent_[static_cast<size_t>(a)] = parent_[static_cast<size_t>(parent_[static_cast<size_t>(a)])];
    return a;
  }
  void unite(int a, int b) {
    a = find(a);
    b = find(b);
    if (a == b) return;
    if (b < a) std::swap(a, b);  // the earlier group keeps its name
    parent_[static_cast<size_t>(b)] = a;
    ChannelGroup& ga = raw_[static_cast<size_t>(a)];
    ChannelGroup& gb = raw_[static_cast<size_t>(b)];
    ga.prunable = ga.prunable && gb.prunable;
    ga.reasons.insert(ga.reasons.end(), gb.reasons.begin(), gb.reasons.end());
    ga.members.insert(ga.members.end(), gb.members.begin(), gb.members.end());
    ga.depthwise_nodes.insert(ga.depthwise_nodes.end(), gb.depthwise_nodes.begin(), gb.depthwise_nodes.end());
    ga.residual = true;
  }
  ChannelGroup& group(int raw) { return raw_[static_cast<size_t>(find(raw))]; }
  void fix(int raw, const std::string& why) {
    ChannelGroup& grp = group(raw);
    grp.prunable = false;
    if (std::find(grp.reasons.begin(), grp.reasons.end(), why) == grp.reasons.end()) grp.reasons.push_back(why);
  }
  void fix_layout(int v, const std::string& why) {
    if (v < 0) return;
    for (const Segment& s : layout(v)) fix(s.group, why);
  }
  std::string node_desc(const Node& n) const { return n.op_type + " node '" + n.name + "'"; }

  // A constant tensor sliced along `axis` following `lay` (segment offsets add up).
  void add_members(const Layout& lay, int node, int value, int axis, MemberRole role, ParamKind kind) {
    int64_t offset = 0;
    for (const Segment& s : lay) {
      group(s.group).members.push_back(Member{node, value, axis, offset, s.inner, role, kind});
      offset += s.count * s.inner;
    }
  }
  // A fresh group for a value the node creates channels for.
  Layout fresh(int v, const std::string& name) {
    if (rank(v) < 2) return {};
    const int grp = new_group(dim(v, 1), name);
    layout(v) = {Segment{grp, dim(v, 1), 1}};
    return layout(v);
  }
  // The node is not understood: everything it touches keeps its channels.
  void opaque(int k, const std::string& why) {
    const Node& n = g_.nodes[static_cast<size_t>(k)];
    const std::string reason = node_desc(n) + ": " + why;
    for (int in : n.inputs) fix_layout(in, reason);
    for (int out : n.outputs) {
      if (out < 0) continue;
      fresh(out, n.name);
      fix_layout(out, reason);
    }
  }
  // Two layouts carry the same channels (residual Add, Concat along a spatial axis).
  bool unify(const Layout& a, const Layout& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i].count != b[i].count || a[i].inner != b[i].inner) return false;
    for (size_t i = 0; i < a.size(); ++i) unite(a[i].group, b[i].group);
    return true;
  }
  // A constant that a private member slices must have no other reader, or pruning would change
  // what the other reader sees.
  bool private_constant(int v) {
    if (!is_const(v)) return false;
    if (!uses_counted_) {
      uses_.assign(g_.values.size(), 0);
      for (const Node& n : g_.nodes)
        for (int in : n.inputs)
          if (in >= 0) ++uses_[static_cast<size_t>(in)];
      uses_counted_ = true;
    }
    return uses_[static_cast<size_t>(v)] == 1;
  }
  static int norm_axis(int64_t axis, int r) { return static_cast<int>(axis < 0 ? axis + r : axis); }

  void pass_through(int k, int in, int out) {
    layout(out) = layout(in);
    result_.cost_values[static_cast<size_t>(k)] = {out};
  }

  // ---- per op -------------------------------------------------------------------------------
  void visit(int k) {
    const Node& n = g_.nodes[static_cast<size_t>(k)];
    const std::string& op = n.op_type;
    const int in0 = n.inputs.empty() ? -1 : n.inputs[0];
    const int out0 = n.outputs.empty() ? -1 : n.outputs[0];
    bool touches = false;
    for (int in : n.inputs) touches = touches || (in >= 0 && !layout(in).empty());
    if (!n.domain.empty()) return opaque(k, "ops of domain '" + n.domain + "' are not analysed");
    if (op == "Conv") return conv(k);
    if (op == "Gemm" || op == "MatMul") return gemm(k);
    if (op == "BatchNormalization") return batchnorm(k);
    if (!touches) {  // nothing with channels comes in: outputs start fresh groups (Constant, Shape...)
      for (int out : n.outputs) {
        if (out < 0 || rank(out) < 2) continue;
        fresh(out, n.name);
        fix_layout(out, node_desc(n) + " creates channels that no Conv/Gemm defines");
      }
      return;
    }
    if (kChannelwiseUnary.count(op) && in0 >= 0 && out0 >= 0 && rank(in0) == rank(out0) && rank(in0) >= 2) {
      if (op == "Dropout" && n.outputs.size() > 1 && n.outputs[1] >= 0) return opaque(k, "Dropout mask output");
      return pass_through(k, in0, out0);
    }
    if (kElementwiseBinary.count(op)) return elementwise(k);
    if (op == "Concat") return concat(k);
    if (op == "Flatten") return flatten(k);
    if (op == "Reshape") return reshape(k);
    if (op == "Squeeze" || op == "Unsqueeze" || kReduce.count(op)) return axes_op(k);
    if (op == "Pad") return pad(k);
    if (op == "Shape") return opaque(k, "reads the channel count");
    return opaque(k, "op not analysed for channel pruning");
  }

  void conv(int k) {
    const Node& n = g_.nodes[static_cast<size_t>(k)];
    const int x = n.inputs.at(0), w = n.inputs.at(1);
    const int b = n.inputs.size() > 2 ? n.inputs[2] : -1;
    const int y = n.outputs.at(0);
    if (rank(x) < 3 || layout(x).empty()) return opaque(k, "input channels not tracked");
    if (!private_constant(w) || (b >= 0 && !private_constant(b)))
      return opaque(k, "weights or bias are not constants read by this node alone");
    const int64_t groups = n.attr_int("group", 1);
    const int64_t cin = dim(x, 1), cout = dim(w, 0);
    result_.cost_values[static_cast<size_t>(k)] = {x, y};
    if (groups == 1) {
      add_members(layout(x), k, w, 1, MemberRole::kConsumer, ParamKind::kWeight);
      const Layout lay = fresh(y, n.name);
      add_members(lay, k, w, 0, MemberRole::kProducer, ParamKind::kWeight);
      if (b >= 0) add_members(lay, k, b, 0, MemberRole::kProducer, ParamKind::kBias);
      return;
    }
    if (groups == cin && cout == cin && dim(w, 1) == 1) {  // depthwise, multiplier 1
      layout(y) = layout(x);
      result_.cost_values[static_cast<size_t>(k)] = {y};
      add_members(layout(y), k, w, 0, MemberRole::kDepthwise, ParamKind::kWeight);
      if (b >= 0) add_members(layout(y), k, b, 0, MemberRole::kDepthwise, ParamKind::kBias);
      for (const Segment& s : layout(y)) group(s.group).depthwise_nodes.push_back(k);
      return;
    }
    opaque(k, "grouped convolution (group=" + std::to_string(groups) + ") that is not depthwise");
  }

  void gemm(int k) {
    const Node& n = g_.nodes[static_cast<size_t>(k)];
    const bool is_gemm = n.op_type == "Gemm";
    const int a = n.inputs.at(0), w = n.inputs.at(1);
    const int c = is_gemm && n.inputs.size() > 2 ? n.inputs[2] : -1;
    const int y = n.outputs.at(0);
    if (is_gemm && n.attr_int("transA", 0) != 0) return opaque(k, "transA=1");
    if (rank(a) != 2 || rank(w) != 2 || !private_constant(w) || layout(a).empty())
      return opaque(k, "needs a 2-D input and private constant 2-D weights");
    const bool trans_b = is_gemm && n.attr_int("transB", 0) != 0;
    const int in_axis = trans_b ? 1 : 0, out_axis = trans_b ? 0 : 1;
    if (c >= 0) {
      const int cr = rank(c);
      const bool per_column = cr >= 1 && dim(c, cr - 1) == dim(y, 1) && (cr == 1 || dim(c, 0) == 1);
      const bool broadcast = cr == 0 || dim(c, cr - 1) == 1;
      if (!(broadcast || (per_column && private_constant(c)))) return opaque(k, "bias C is not a per-column constant");
    }
    add_members(layout(a), k, w, in_axis, MemberRole::kConsumer, ParamKind::kWeight);
    const Layout lay = fresh(y, n.name);
    result_.cost_values[static_cast<size_t>(k)] = {a, y};
    add_members(lay, k, w, out_axis, MemberRole::kProducer, ParamKind::kWeight);
    if (c >= 0 && rank(c) >= 1 && dim(c, rank(c) - 1) != 1)
      add_members(lay, k, c, rank(c) - 1, MemberRole::kProducer, ParamKind::kBias);
  }

  void batchnorm(int k) {
    const Node& n = g_.nodes[static_cast<size_t>(k)];
    const int x = n.inputs.at(0), y = n.outputs.at(0);
    bool ok = rank(x) >= 2 && !layout(x).empty() && n.inputs.size() == 5;
    for (size_t i = 1; ok && i < 5; ++i) ok = private_constant(n.inputs[i]);
    for (size_t i = 1; i < n.outputs.size(); ++i) ok = ok && n.outputs[i] < 0;  // no training outputs
    if (!ok) return opaque(k, "parameters are not private constants");
    pass_through(k, x, y);
    const ParamKind kinds[] = {ParamKind::kBnScale, ParamKind::kBnShift, ParamKind::kBnMean, ParamKind::kBnVar};
    for (size_t i = 1; i < 5; ++i) add_members(layout(x), k, n.inputs[i], 0, MemberRole::kPerChannel, kinds[i - 1]);
  }

  void elementwise(int k) {
    const Node& n = g_.nodes[static_cast<size_t>(k)];
    const int y = n.outputs.at(0);
    const int r = rank(y);
    if (r < 2) return opaque(k, "output of rank < 2");
    const int64_t c = dim(y, 1);
    std::vector<int> computed;   // non-constant inputs carrying the output's channels
    std::vector<int> constants;  // per-channel constants
    for (int in : n.inputs) {
      if (in < 0) continue;
      const int ir = rank(in);
      const int axis = 1 - (r - ir);  // the input's axis aligned with the output's channel axis
      const int64_t d = axis >= 0 && ir >= 0 ? dim(in, axis) : 1;
      if (d == 1 && c != 1) continue;  // broadcast along channels: no tie
      if (is_const(in)) {
        if (!private_constant(in)) return opaque(k, "a per-channel constant is shared with other nodes");
        constants.push_back(in);
      } else if (ir == r && !layout(in).empty()) {
        computed.push_back(in);
      } else {
        return opaque(k, "an input of another rank carries the channel axis");
      }
    }
    if (computed.empty()) return opaque(k, "no computed input carries the channels");
    layout(y) = layout(computed[0]);
    result_.cost_values[static_cast<size_t>(k)] = {y};
    for (size_t i = 1; i < computed.size(); ++i) {
      if (!unify(layout(computed[0]), layout(computed[i]))) {
        const std::string why = node_desc(n) + ": inputs with differently split channels";
        for (int in : computed) fix_layout(in, why);
        return;
      }
    }
    for (int cst : constants) {
      const int axis = 1 - (r - rank(cst));
      add_members(layout(y), k, cst, axis, MemberRole::kPerChannel, ParamKind::kPerChannel);
    }
  }

  void concat(int k) {
    const Node& n = g_.nodes[static_cast<size_t>(k)];
    const int y = n.outputs.at(0);
    const int r = rank(y);
    if (r < 2) return opaque(k, "output of rank < 2");
    const int axis = norm_axis(n.attr_int("axis"), r);
    for (int in : n.inputs)
      if (in < 0 || layout(in).empty() || rank(in) != r) return opaque(k, "an input without tracked channels");
    result_.cost_values[static_cast<size_t>(k)] = {y};
    if (axis == 1) {
      Layout lay;
      for (int in : n.inputs) lay.insert(lay.end(), layout(in).begin(), layout(in).end());
      layout(y) = lay;
      return;
    }
    if (axis == 0) return opaque(k, "concatenation along the batch axis");
    layout(y) = layout(n.inputs[0]);
    for (size_t i = 1; i < n.inputs.size(); ++i)
      if (!unify(layout(n.inputs[0]), layout(n.inputs[i]))) return opaque(k, "inputs with differently split channels");
  }

  // [N,C,H,W] -> [N, C*H*W]: each channel becomes H*W consecutive columns.
  void flatten_to(int k, int x, int y) {
    int64_t spatial = 1;
    for (int i = 2; i < rank(x); ++i) spatial *= dim(x, i);
    Layout lay = layout(x);
    for (Segment& s : lay) s.inner *= spatial;
    layout(y) = lay;
    result_.cost_values[static_cast<size_t>(k)] = {y};
  }
  void flatten(int k) {
    const Node& n = g_.nodes[static_cast<size_t>(k)];
    const int x = n.inputs.at(0), y = n.outputs.at(0);
    if (norm_axis(n.attr_int("axis", 1), rank(x)) != 1) return opaque(k, "Flatten axis is not 1");
    if (rank(x) == 2) return pass_through(k, x, y);
    flatten_to(k, x, y);
  }
  // Only the Flatten-equivalent form is provable: a constant shape [0 or N, -1] on an input of
  // rank >= 2 (a literal C*H*W would have to be rewritten, and computed shapes are opaque).
  void reshape(int k) {
    const Node& n = g_.nodes[static_cast<size_t>(k)];
    const int x = n.inputs.at(0), s = n.inputs.at(1), y = n.outputs.at(0);
    if (!is_const(s) || n.attr_int("allowzero", 0) != 0) return opaque(k, "the shape is not a constant");
    const std::vector<int64_t> shape = g_.value(s).data->to_int_vector();
    const bool flat = shape.size() == 2 && shape[1] == -1 && (shape[0] == 0 || shape[0] == dim(x, 0));
    if (!flat) return opaque(k, "only Reshape to [N,-1] is provable");
    if (rank(x) == 2) return pass_through(k, x, y);
    flatten_to(k, x, y);
  }
  // Squeeze/Unsqueeze/Reduce*: fine when no listed axis is the batch or channel axis and the
  // channel axis stays axis 1.
  void axes_op(int k) {
    const Node& n = g_.nodes[static_cast<size_t>(k)];
    const int x = n.inputs.at(0), y = n.outputs.at(0);
    std::vector<int64_t> axes = n.attr_ints("axes");
    if (n.inputs.size() > 1 && n.inputs[1] >= 0) {
      if (!is_const(n.inputs[1])) return opaque(k, "axes are not a constant");
      axes = g_.value(n.inputs[1]).data->to_int_vector();
    }
    if (axes.empty()) return opaque(k, "no axes: all axes (including channels) are affected");
    const int r = n.op_type == "Unsqueeze" ? rank(y) : rank(x);
    for (int64_t a : axes)
      if (norm_axis(a, r) < 2) return opaque(k, "an axis is the batch or channel axis");
    if (rank(y) < 2) return opaque(k, "output of rank < 2");
    pass_through(k, x, y);
  }
  void pad(int k) {
    const Node& n = g_.nodes[static_cast<size_t>(k)];
    const int x = n.inputs.at(0), y = n.outputs.at(0);
    if (n.inputs.size() < 2 || !is_const(n.inputs[1])) return opaque(k, "pads are not a constant");
    if (n.inputs.size() > 3 && n.inputs[3] >= 0) return opaque(k, "pads with explicit axes");
    const std::vector<int64_t> pads = g_.value(n.inputs[1]).data->to_int_vector();
    const size_t r = static_cast<size_t>(rank(x));
    if (pads.size() != 2 * r || pads[1] != 0 || pads[1 + r] != 0) return opaque(k, "pads the channel axis");
    pass_through(k, x, y);
  }

  ChannelAnalysis finish() {
    std::map<int, int> id_of;  // root raw id -> final id
    for (size_t i = 0; i < raw_.size(); ++i) {
      const int root = find(static_cast<int>(i));
      if (!id_of.count(root)) {
        id_of[root] = static_cast<int>(result_.groups.size());
        ChannelGroup grp = raw_[static_cast<size_t>(root)];
        grp.id = id_of[root];
        if (grp.producers() == 0 && grp.prunable) {
          grp.prunable = false;
          grp.reasons.push_back("no Conv/Gemm produces these channels");
        }
        result_.groups.push_back(std::move(grp));
      }
    }
    for (size_t v = 0; v < result_.layout.size(); ++v) {
      for (Segment& s : result_.layout[v]) {
        s.group = id_of.at(find(s.group));
        std::vector<int>& vals = result_.groups[static_cast<size_t>(s.group)].values;
        if (vals.empty() || vals.back() != static_cast<int>(v)) vals.push_back(static_cast<int>(v));
      }
    }
    for (ChannelGroup& grp : result_.groups) {
      std::sort(grp.depthwise_nodes.begin(), grp.depthwise_nodes.end());
      grp.depthwise_nodes.erase(std::unique(grp.depthwise_nodes.begin(), grp.depthwise_nodes.end()), grp.depthwise_nodes.end());
    }
    return std::move(result_);
  }

  const Graph& g_;
  std::vector<Shape> shape_;
  std::vector<char> has_shape_;
  std::vector<int> parent_;
  std::vector<ChannelGroup> raw_;
  std::vector<int> uses_;
  bool uses_counted_ = false;
  ChannelAnalysis result_;
};

}  // namespace

ChannelAnalysis analyze_channels(const Graph& graph, const std::map<std::string, Shape>& input_shapes) {
  return Analyzer(graph, input_shapes).run();
}

std::string describe_groups(const Graph& graph, const ChannelAnalysis& analysis) {
  std::ostringstream os;
  for (const ChannelGroup& grp : analysis.groups) {
    int consumers = 0, per_channel = 0;
    for (const Member& m : grp.members) {
      consumers += m.role == MemberRole::kConsumer && m.kind == ParamKind::kWeight;
      per_channel += m.role == MemberRole::kPerChannel;
    }
    os << "group " << grp.id << " '" << grp.name << "': " << grp.channels << " channels, " << grp.producers()
       << " producer(s), " << consumers << " consumer(s), " << per_channel << " per-channel param(s)";
    if (!grp.depthwise_nodes.empty()) os << ", " << grp.depthwise_nodes.size() << " depthwise conv(s)";
    if (grp.residual) os << ", residual";
    if (grp.prunable) {
      os << ": prunable";
    } else {
      os << ": NOT prunable (";
      for (size_t i = 0; i < grp.reasons.size(); ++i) os << (i ? "; " : "") << grp.reasons[i];
      os << ")";
    }
    os << "\n";
  }
  (void)graph;
  return os.str();
}

}  // namespace xnn::channel
