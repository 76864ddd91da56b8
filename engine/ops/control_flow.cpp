// Control flow: If, Loop and Scan (opset 9+ semantics; the opset 8 batched Scan, recognised by
// its extra leading sequence_lens input, left out or int64, runs batch by batch). Their subgraphs run through the
// SubgraphHost the runtime hands to the kernel (engine/runtime/subgraph_host.h), which binds the
// subgraph's inputs, resolves its outer-scope names in the enclosing graphs and caches a plan
// per body; this file only holds the semantics: which branch, how many iterations, what is
// carried, sliced and stacked.
//
// Inference infers the subgraphs with the host too: If's outputs are known when both branches
// agree (or the condition is a constant), Loop's loop-carried outputs when the body keeps their
// shapes, its scan outputs only when the trip count is a constant, Scan's always (the sequence
// length is a shape). Otherwise inference throws ValueNeededError and the graph runs without a
// static plan. Without a host (constant folding) the subgraphs' declared output types are used.
#include <algorithm>
#include <cstring>
#include <limits>

#include "engine/ops/op_helpers.h"

namespace xnn {
namespace {

const Graph& subgraph_attr(const Node& node, const char* attr) {
  std::shared_ptr<Graph> g = node.attr_graph(attr);
  if (!g) throw Error(node.describe() + ": attribute '" + std::string(attr) + "' (a graph) is required");
  return *g;
}

// Calls f(), prefixing an error from inside a subgraph with "<node>: <what()>: " so it says
// which control-flow node and which subgraph (and iteration) it came from; the error's kind is
// kept. `what` is only called on error (no string building per iteration).
template <typename W, typename F>
auto in_subgraph(const Node& node, W&& what, F&& f) {
  try {
    return f();
  } catch (const ValueNeededError& e) {
    throw ValueNeededError(node.describe() + ": " + what() + ": " + e.what());
  } catch (const UnsupportedError& e) {
    throw UnsupportedError(node.describe() + ": " + what() + ": " + e.what());
  } catch (const Error& e) {
    throw Error(node.describe() + ": " + what() + ": " + e.what());
  }
}

SubgraphHost& host_of(const KernelContext& ctx) {
  if (!ctx.subgraphs()) ctx.fail("control flow needs a runtime that runs subgraphs (none was given)");
  return *ctx.subgraphs();
}

std::string describe_info(const TensorInfo& t) {
  return std::string(dtype_name(t.dtype)) + " " + shape_str(t.shape);
}

// Declared dtype/shape of `body`'s output k; shape empty with `known` false where not fully declared.
struct Declared {
  DType dtype = DType::kUnknown;
  bool known_shape = false;
  Shape shape;
};
Declared declared_output(const Graph& body, size_t k) {
  const Value& v = body.value(body.outputs[k]);
  Declared d;
  if (v.is_constant()) {
    d.dtype = v.data->dtype();
    d.known_shape = true;
    d.shape = v.data->shape();
    return d;
  }
  d.dtype = v.dtype;
  if (v.has_shape && v.shape_fully_known()) {
    d.known_shape = true;
    d.shape = v.static_shape();
  }
  return d;
}

// Infers `body` for these inputs with the host; without one, from the body's declared output
// types, which must then be complete.
std::vector<TensorInfo> infer_body(const InferContext& ctx, const Graph& body, const std::vector<TensorInfo>& inputs,
                                   const char* what) {
  if (ctx.subgraphs()) return in_subgraph(ctx.node(), [&] { return std::string(what); }, [&] { return ctx.subgraphs()->infer(body, inputs); });
  std::vector<TensorInfo> outs(body.outputs.size());
  for (size_t k = 0; k < outs.size(); ++k) {
    const Declared d = declared_output(body, k);
    if (d.dtype == DType::kUnknown || !d.known_shape) {
      throw ValueNeededError(ctx.node().describe() + ": the " + what + "'s output " + std::to_string(k) +
                             " has no declared type, and nothing here can infer the subgraph");
    }
    outs[k] = TensorInfo{d.dtype, d.shape, nullptr};
  }
  return outs;
}

// Stores a subgraph result as output i: copied into a planned output (whose dtype and shape
// inference fixed), or handed over when the output was left for the kernel to assign.
void set_result(KernelContext& ctx, int i, const Tensor& result) {
  if (!ctx.has_output(i)) return;
  Tensor& out = ctx.output(i);
  if (!out.defined()) {
    out = result;
    return;
  }
  if (out.dtype() != result.dtype() || out.shape() != result.shape()) {
    ctx.fail("output " + std::to_string(i) + " was planned as " + std::string(dtype_name(out.dtype())) + " " +
             shape_str(out.shape()) + " but the subgraph gave " + std::string(dtype_name(result.dtype())) + " " +
             shape_str(result.shape()));
  }
  if (out.raw() != result.raw() && result.nbytes() > 0) std::memcpy(out.raw(), result.raw(), result.nbytes());
}

bool scalar_flag(const KernelContext& ctx, const Tensor& t, const std::string& what) {
  if (t.numel() != 1) ctx.fail(what + " must have one element, got shape " + shape_str(t.shape()));
  return t.scalar_as_double(0) != 0;
}

// Copies `src` into `dst` when they can share storage (same dtype and shape, `dst` ours alone),
// else makes `dst` a copy of `src`. Keeps a loop-carried value in our own buffer so the body's
// output buffer is free for its next iteration.
void carry(Tensor& dst, const Tensor& src) {
  if (dst.defined() && dst.raw() == src.raw() && dst.shape() == src.shape()) return;
  const bool reusable = dst.defined() && dst.dtype() == src.dtype() && dst.shape() == src.shape() &&
                        dst.buffer().use_count() == 1 && dst.buffer()->owns_memory();
  if (!reusable) dst = Tensor(src.dtype(), src.shape());
  if (src.nbytes() > 0) std::memcpy(dst.raw(), src.raw(), src.nbytes());
}

// Per-iteration results stacked along `axis` into one tensor: iteration shape S gives
// S[0:axis] + [count] + S[axis:]. Iteration i lands at position `reverse ? count-1-i : i`.
class Stacker {
 public:
  Stacker(int64_t count, int axis, bool reverse) : count_(count), axis_(axis), reverse_(reverse) {}

  void add(const KernelContext& ctx, int output, const Tensor& t) {
    if (!out_.defined()) {
      const int rank = t.rank() + 1;
      const int64_t a = axis_ < 0 ? axis_ + rank : axis_;
      if (a < 0 || a >= rank) {
        ctx.fail("scan output " + std::to_string(output) + ": axis " + std::to_string(axis_) +
                 " out of range for rank " + std::to_string(rank));
      }
      item_ = t.shape();
      Shape shape = item_;
      shape.insert(shape.begin() + a, count_);
      out_ = Tensor(t.dtype(), shape);
      outer_ = 1;
      for (int64_t d = 0; d < a; ++d) outer_ *= item_[static_cast<size_t>(d)];
      inner_bytes_ = (t.numel() / std::max<int64_t>(outer_, 1)) * static_cast<int64_t>(dtype_size(t.dtype()));
      if (outer_ == 0) inner_bytes_ = 0;
    } else if (t.dtype() != out_.dtype() || t.shape() != item_) {
      ctx.fail("scan output " + std::to_string(output) + " changes between iterations: " +
               std::string(dtype_name(out_.dtype())) + " " + shape_str(item_) + " then " +
               std::string(dtype_name(t.dtype())) + " " + shape_str(t.shape()));
    }
    if (next_ >= count_) ctx.fail("scan output " + std::to_string(output) + ": more iterations than planned");
    const int64_t pos = reverse_ ? count_ - 1 - next_ : next_;
    const char* src = static_cast<const char*>(t.raw());
    char* dst = static_cast<char*>(out_.raw());
    for (int64_t o = 0; o < outer_; ++o) {
      std::memcpy(dst + (o * count_ + pos) * inner_bytes_, src + o * inner_bytes_, static_cast<size_t>(inner_bytes_));
    }
    ++next_;
  }
  bool started() const { return out_.defined(); }
  // The stacked tensor (after `count` adds).
  const Tensor& result() const { return out_; }
  // A stack of zero iterations of items of `item` (nothing was added).
  Tensor empty(DType dtype, Shape item) const {
    const int rank = static_cast<int>(item.size()) + 1;
    const int64_t a = axis_ < 0 ? axis_ + rank : axis_;
    item.insert(item.begin() + std::clamp<int64_t>(a, 0, rank - 1), 0);
    return Tensor(dtype, item);
  }

 private:
  int64_t count_;
  int axis_;
  bool reverse_;
  Tensor out_;
  Shape item_;
  int64_t outer_ = 1, inner_bytes_ = 0, next_ = 0;
};

// Element i along `axis` of `t` (that axis removed): a view for axis 0, else a copy.
Tensor slice_along(const Tensor& t, int axis, int64_t i) {
  Shape item = t.shape();
  item.erase(item.begin() + axis);
  if (axis == 0) return t.slice_outer(i, i + 1).reshaped(item);
  Tensor out(t.dtype(), item);
  int64_t outer = 1;
  for (int d = 0; d < axis; ++d) outer *= t.dim(d);
  const int64_t len = t.dim(axis);
  const int64_t inner_bytes = outer == 0 ? 0 : static_cast<int64_t>(out.nbytes()) / outer;
  const char* src = static_cast<const char*>(t.raw());
  char* dst = static_cast<char*>(out.raw());
  for (int64_t o = 0; o < outer; ++o) {
    std::memcpy(dst + o * inner_bytes, src + (o * len + i) * inner_bytes, static_cast<size_t>(inner_bytes));
  }
  return out;
}

// The dtype/shape a zero-iteration loop's scan output k (body output `body_index`) has per item:
// inferred where the host can, else declared; unknown dims count as 0.
TensorInfo zero_trip_item(KernelContext& ctx, const Graph& body, const std::vector<TensorInfo>& body_inputs,
                          size_t body_index) {
  try {
    std::vector<TensorInfo> outs = in_subgraph(ctx.node(), [] { return std::string("body"); }, [&] { return host_of(ctx).infer(body, body_inputs); });
    return outs.at(body_index);
  } catch (const ValueNeededError&) {
  }
  const Value& v = body.value(body.outputs[body_index]);
  if (v.dtype == DType::kUnknown) {
    ctx.fail("scan output of body output " + std::to_string(body_index) +
             ": the loop ran zero times and the body declares no dtype for it");
  }
  Shape s;
  for (const Dim& d : v.shape) s.push_back(d.known() ? d.value : 0);
  return TensorInfo{v.dtype, s, nullptr};
}

std::vector<TensorInfo> infos_of(const std::vector<Tensor>& ts) {
  std::vector<TensorInfo> out;
  for (const Tensor& t : ts) out.push_back(TensorInfo{t.dtype(), t.shape(), nullptr});
  return out;
}

void check_result_count(const KernelContext& ctx, const std::vector<Tensor>& outs, size_t expected, const char* what) {
  if (outs.size() != expected) {
    ctx.fail("the " + std::string(what) + " gave " + std::to_string(outs.size()) + " outputs, expected " +
             std::to_string(expected));
  }
}

// ---- If ------------------------------------------------------------------------------------

void check_branch_arity(const Node& node, const Graph& then_g, const Graph& else_g) {
  const size_t n = node.outputs.size();
  for (const auto& [g, name] : {std::pair{&then_g, "then_branch"}, std::pair{&else_g, "else_branch"}}) {
    if (g->outputs.size() < n) {
      throw Error(node.describe() + ": " + name + " has " + std::to_string(g->outputs.size()) +
                  " outputs, the node has " + std::to_string(n));
    }
  }
  for (size_t k = 0; k < n; ++k) {
    const DType a = declared_output(then_g, k).dtype, b = declared_output(else_g, k).dtype;
    if (a != DType::kUnknown && b != DType::kUnknown && a != b) {
      throw Error(node.describe() + ": output " + std::to_string(k) + " is " + std::string(dtype_name(a)) +
                  " in then_branch but " + std::string(dtype_name(b)) + " in else_branch (both branches must agree)");
    }
  }
}

void infer_if(InferContext& ctx) {
  const Node& node = ctx.node();
  const Graph& then_g = subgraph_attr(node, "then_branch");
  const Graph& else_g = subgraph_attr(node, "else_branch");
  check_branch_arity(node, then_g, else_g);
  const TensorInfo& cond = ctx.input(0);
  if (shape_numel(cond.shape) != 1) ctx.fail("the condition must have one element, got shape " + shape_str(cond.shape));
  if (cond.value) {  // a constant condition: only the taken branch matters
    const bool c = cond.value->scalar_as_double(0) != 0;
    std::vector<TensorInfo> outs = infer_body(ctx, c ? then_g : else_g, {}, c ? "then_branch" : "else_branch");
    for (int i = 0; i < ctx.num_outputs(); ++i) ctx.set_output(i, outs[static_cast<size_t>(i)].dtype, outs[static_cast<size_t>(i)].shape);
    return;
  }
  const std::vector<TensorInfo> t = infer_body(ctx, then_g, {}, "then_branch");
  const std::vector<TensorInfo> e = infer_body(ctx, else_g, {}, "else_branch");
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    const TensorInfo& a = t[static_cast<size_t>(i)];
    const TensorInfo& b = e[static_cast<size_t>(i)];
    if (a.dtype != b.dtype) {
      ctx.fail("output " + std::to_string(i) + " is " + describe_info(a) + " in then_branch but " + describe_info(b) +
               " in else_branch (both branches must give the same dtype)");
    }
    if (a.shape != b.shape) {
      throw ValueNeededError(node.describe() + ": output " + std::to_string(i) + " is " + shape_str(a.shape) +
                             " in then_branch but " + shape_str(b.shape) +
                             " in else_branch: its shape is known only at run time");
    }
    ctx.set_output(i, a.dtype, a.shape);
  }
}

void if_kernel(KernelContext& ctx) {
  const Node& node = ctx.node();
  const bool c = scalar_flag(ctx, ctx.input(0), "the condition");
  const Graph& branch = subgraph_attr(node, c ? "then_branch" : "else_branch");
  SubgraphHost& host = host_of(ctx);
  std::vector<Tensor> outs = in_subgraph(node, [&] { return std::string(c ? "then_branch" : "else_branch"); }, [&] { return host.run(branch, {}); });
  if (outs.size() < node.outputs.size()) check_result_count(ctx, outs, node.outputs.size(), c ? "then_branch" : "else_branch");
  for (int i = 0; i < ctx.num_outputs(); ++i) set_result(ctx, i, outs[static_cast<size_t>(i)]);
}

// ---- Loop ----------------------------------------------------------------------------------

struct LoopShape {
  size_t carried = 0;  // N: loop-carried values
  size_t scans = 0;    // K: scan outputs
};

LoopShape loop_shape(const Node& node, const Graph& body) {
  LoopShape s;
  s.carried = node.inputs.size() < 2 ? 0 : node.inputs.size() - 2;
  if (body.inputs.size() != 2 + s.carried) {
    throw Error(node.describe() + ": the body has " + std::to_string(body.inputs.size()) + " inputs; with " +
                std::to_string(s.carried) + " loop-carried values it needs " + std::to_string(2 + s.carried) +
                " (iteration number, condition, the values)");
  }
  if (body.outputs.size() < 1 + s.carried) {
    throw Error(node.describe() + ": the body has " + std::to_string(body.outputs.size()) + " outputs; with " +
                std::to_string(s.carried) + " loop-carried values it needs at least " + std::to_string(1 + s.carried) +
                " (condition, the values, then scan outputs)");
  }
  s.scans = body.outputs.size() - 1 - s.carried;
  if (node.outputs.size() > s.carried + s.scans) {
    throw Error(node.describe() + ": has " + std::to_string(node.outputs.size()) + " outputs, the body gives " +
                std::to_string(s.carried) + " loop-carried values and " + std::to_string(s.scans) + " scan outputs");
  }
  return s;
}

std::vector<TensorInfo> loop_body_inputs(std::span<const TensorInfo> carried) {
  std::vector<TensorInfo> in{TensorInfo{DType::kI64, {}, nullptr}, TensorInfo{DType::kBool, {}, nullptr}};
  in.insert(in.end(), carried.begin(), carried.end());
  return in;
}

void infer_loop(InferContext& ctx) {
  const Node& node = ctx.node();
  const Graph& body = subgraph_attr(node, "body");
  const LoopShape ls = loop_shape(node, body);
  const bool has_m = ctx.has_input(0), has_cond = ctx.has_input(1);
  if (has_m && shape_numel(ctx.input(0).shape) != 1) ctx.fail("the trip count M must have one element");
  if (has_cond && shape_numel(ctx.input(1).shape) != 1) ctx.fail("the condition must have one element");
  std::vector<TensorInfo> carried;
  for (size_t j = 0; j < ls.carried; ++j) {
    const TensorInfo& t = ctx.input(static_cast<int>(2 + j));
    carried.push_back(TensorInfo{t.dtype, t.shape, nullptr});
  }
  const std::vector<TensorInfo> outs = infer_body(ctx, body, loop_body_inputs(carried), "body");
  for (size_t j = 0; j < ls.carried; ++j) {
    const TensorInfo& o = outs[1 + j];
    if (o.dtype != carried[j].dtype) {
      ctx.fail("loop-carried value " + std::to_string(j) + " starts as " + describe_info(carried[j]) +
               " but the body returns " + describe_info(o));
    }
    if (o.shape != carried[j].shape) {
      throw ValueNeededError(node.describe() + ": loop-carried value " + std::to_string(j) + " changes shape from " +
                             shape_str(carried[j].shape) + " to " + shape_str(o.shape) + ": known only at run time");
    }
    ctx.set_output(static_cast<int>(j), o.dtype, o.shape);
  }
  if (ctx.num_outputs() <= static_cast<int>(ls.carried)) return;
  // Scan outputs stack one item per iteration: the trip count must be known now.
  int64_t trips = -1;
  const bool cond_false = has_cond && ctx.input(1).value && ctx.input(1).value->scalar_as_double(0) == 0;
  if (cond_false) trips = 0;
  else if (has_m && ctx.input(0).value && !has_cond) trips = std::max<int64_t>(0, ctx.input(0).value->scalar_as_int(0));
  if (trips < 0) {
    throw ValueNeededError(node.describe() + ": the number of iterations (scan outputs' first dim) is known only at run time");
  }
  for (size_t k = 0; k < ls.scans && static_cast<int>(ls.carried + k) < ctx.num_outputs(); ++k) {
    const TensorInfo& o = outs[1 + ls.carried + k];
    Shape s = o.shape;
    s.insert(s.begin(), trips);
    ctx.set_output(static_cast<int>(ls.carried + k), o.dtype, s);
  }
}

// A scalar tensor holding `v`, reusing `t`'s storage when nobody else holds it.
template <typename T>
void refill_scalar(Tensor& t, T v) {
  if (!t.defined() || t.buffer().use_count() != 1) t = Tensor::scalar<T>(v);
  else *t.data<T>() = v;
}

void loop_kernel(KernelContext& ctx) {
  const Node& node = ctx.node();
  const Graph& body = subgraph_attr(node, "body");
  const LoopShape ls = loop_shape(node, body);
  SubgraphHost& host = host_of(ctx);
  const bool has_m = ctx.has_input(0), has_cond = ctx.has_input(1);
  if (!has_m && !has_cond) ctx.unsupported("a Loop with neither a trip count nor a condition never ends");
  const int64_t max_trips = has_m ? ctx.input(0).scalar_as_int(0) : std::numeric_limits<int64_t>::max();
  bool keep_going = has_cond ? scalar_flag(ctx, ctx.input(1), "the condition") : true;

  std::vector<Tensor> inputs(2 + ls.carried);
  for (size_t j = 0; j < ls.carried; ++j) inputs[2 + j] = ctx.input(static_cast<int>(2 + j));
  std::vector<std::vector<char>> grown(ls.scans);  // items while the trip count is unknown
  std::vector<Tensor> items(ls.scans);             // one item per scan output, for dtype/shape
  int64_t i = 0;
  for (; i < max_trips && keep_going; ++i) {
    refill_scalar<int64_t>(inputs[0], i);
    refill_scalar<bool>(inputs[1], keep_going);
    std::vector<Tensor> outs =
        in_subgraph(node, [&] { return "body (iteration " + std::to_string(i) + ")"; }, [&] { return host.run(body, inputs); });
    check_result_count(ctx, outs, body.outputs.size(), "body");
    if (has_cond) keep_going = scalar_flag(ctx, outs[0], "the body's condition output");
    for (size_t j = 0; j < ls.carried; ++j) {
      const Tensor& o = outs[1 + j];
      if (o.dtype() != inputs[2 + j].dtype()) {
        ctx.fail("loop-carried value " + std::to_string(j) + " is " + std::string(dtype_name(inputs[2 + j].dtype())) +
                 " but iteration " + std::to_string(i) + " returned " + std::string(dtype_name(o.dtype())));
      }
      carry(inputs[2 + j], o);
    }
    for (size_t k = 0; k < ls.scans; ++k) {
      const Tensor& o = outs[1 + ls.carried + k];
      if (!items[k].defined()) {
        items[k] = Tensor(o.dtype(), o.shape());
      } else if (o.dtype() != items[k].dtype() || o.shape() != items[k].shape()) {
        ctx.fail("scan output " + std::to_string(k) + " changes between iterations: " +
                 std::string(dtype_name(items[k].dtype())) + " " + shape_str(items[k].shape()) + " then " +
                 std::string(dtype_name(o.dtype())) + " " + shape_str(o.shape()));
      }
      const char* p = static_cast<const char*>(o.raw());
      grown[k].insert(grown[k].end(), p, p + o.nbytes());
    }
  }
  for (size_t j = 0; j < ls.carried; ++j) set_result(ctx, static_cast<int>(j), inputs[2 + j]);
  for (size_t k = 0; k < ls.scans; ++k) {
    const int out = static_cast<int>(ls.carried + k);
    if (!ctx.has_output(out)) continue;
    Tensor stacked;
    if (i == 0) {
      std::vector<Tensor> carried(inputs.begin() + 2, inputs.end());
      const TensorInfo item = zero_trip_item(ctx, body, loop_body_inputs(infos_of(carried)), 1 + ls.carried + k);
      Shape s = item.shape;
      s.insert(s.begin(), 0);
      stacked = Tensor(item.dtype, s);
    } else {
      Shape s = items[k].shape();
      s.insert(s.begin(), i);
      stacked = Tensor(items[k].dtype(), s);
      if (!grown[k].empty()) std::memcpy(stacked.raw(), grown[k].data(), grown[k].size());
    }
    set_result(ctx, out, stacked);
  }
}

// ---- Scan ----------------------------------------------------------------------------------

struct ScanSpec {
  bool batched = false;  // opset 8 form: leading sequence_lens input, batch axis 0
  size_t states = 0, scan_inputs = 0, scan_outputs = 0;
  std::vector<int64_t> in_axes, in_reverse, out_axes, out_reverse;
};

// `first_input`: the dtype of the node's input 0 (kUnknown when left out).
ScanSpec scan_spec(const Node& node, const Graph& body, DType first_input) {
  ScanSpec s;
  const int64_t m = node.attr_int("num_scan_inputs");
  // Opset 8 has one more input than the body, its optional int64 sequence_lens first; opset 9+
  // exactly as many (none of them optional).
  s.batched = node.inputs.size() == body.inputs.size() + 1 &&
              (first_input == DType::kUnknown || first_input == DType::kI64);
  const size_t given = node.inputs.size() - (s.batched ? 1 : 0);
  if (given != body.inputs.size()) {
    throw Error(node.describe() + ": the body has " + std::to_string(body.inputs.size()) + " inputs but the node gives " +
                std::to_string(given) + " (states, then scan inputs)");
  }
  if (m < 1 || static_cast<size_t>(m) > given) {
    throw Error(node.describe() + ": num_scan_inputs is " + std::to_string(m) + ", expected 1.." + std::to_string(given));
  }
  s.scan_inputs = static_cast<size_t>(m);
  s.states = given - s.scan_inputs;
  if (body.outputs.size() < s.states) {
    throw Error(node.describe() + ": the body has " + std::to_string(body.outputs.size()) + " outputs, fewer than its " +
                std::to_string(s.states) + " states");
  }
  s.scan_outputs = body.outputs.size() - s.states;
  if (node.outputs.size() > s.states + s.scan_outputs) {
    throw Error(node.describe() + ": has " + std::to_string(node.outputs.size()) + " outputs, the body gives " +
                std::to_string(s.states + s.scan_outputs));
  }
  auto list = [&](const char* attr, size_t n) {
    std::vector<int64_t> v = node.attr_ints(attr, std::vector<int64_t>(n, 0));
    if (v.size() != n) {
      throw Error(node.describe() + ": attribute '" + std::string(attr) + "' has " + std::to_string(v.size()) +
                  " entries, expected " + std::to_string(n));
    }
    return v;
  };
  if (s.batched) {
    s.in_reverse = list("directions", s.scan_inputs);
    s.in_axes.assign(s.scan_inputs, 0);
    s.out_axes.assign(s.scan_outputs, 0);
    s.out_reverse.assign(s.scan_outputs, 0);
  } else {
    s.in_axes = list("scan_input_axes", s.scan_inputs);
    s.in_reverse = list("scan_input_directions", s.scan_inputs);
    s.out_axes = list("scan_output_axes", s.scan_outputs);
    s.out_reverse = list("scan_output_directions", s.scan_outputs);
  }
  return s;
}

// The sequence length shared by the scan inputs (their axes normalised in place).
int64_t sequence_length(const Node& node, const std::vector<Shape>& scan_shapes, std::vector<int64_t>& axes) {
  int64_t len = -1;
  for (size_t k = 0; k < scan_shapes.size(); ++k) {
    const int rank = static_cast<int>(scan_shapes[k].size());
    if (rank == 0) throw Error(node.describe() + ": scan input " + std::to_string(k) + " is a scalar");
    axes[k] = normalize_axis(axes[k], rank, node);
    const int64_t d = scan_shapes[k][static_cast<size_t>(axes[k])];
    if (len >= 0 && d != len) {
      throw Error(node.describe() + ": scan inputs disagree on the sequence length: " + std::to_string(len) + " and " +
                  std::to_string(d) + " (scan input " + std::to_string(k) + ", shape " + shape_str(scan_shapes[k]) + ")");
    }
    len = d;
  }
  return len;
}

Shape without_axis(Shape s, int64_t axis) {
  s.erase(s.begin() + axis);
  return s;
}

Shape with_axis(Shape s, int64_t axis, int64_t len, const Node& node) {
  const int rank = static_cast<int>(s.size()) + 1;
  s.insert(s.begin() + normalize_axis(axis, rank, node), len);
  return s;
}

void infer_scan(InferContext& ctx) {
  const Node& node = ctx.node();
  const Graph& body = subgraph_attr(node, "body");
  ScanSpec spec = scan_spec(node, body, ctx.has_input(0) ? ctx.input(0).dtype : DType::kUnknown);
  const int first = spec.batched ? 1 : 0;
  if (spec.batched && ctx.has_input(0)) {
    throw ValueNeededError(node.describe() + ": sequence_lens is checked at run time");
  }
  const int batch_axes = spec.batched ? 1 : 0;  // batched inputs carry the batch in dim 0
  int64_t batch = -1;
  std::vector<TensorInfo> body_in;
  for (size_t j = 0; j < spec.states; ++j) {
    const TensorInfo& t = ctx.input(first + static_cast<int>(j));
    Shape s = t.shape;
    if (spec.batched) {
      if (s.empty()) ctx.fail("state " + std::to_string(j) + " needs a batch dimension");
      batch = s[0];
      s.erase(s.begin());
    }
    body_in.push_back(TensorInfo{t.dtype, s, nullptr});
  }
  std::vector<Shape> scan_shapes;
  for (size_t k = 0; k < spec.scan_inputs; ++k) {
    Shape s = ctx.input(first + static_cast<int>(spec.states + k)).shape;
    if (spec.batched) {
      if (s.empty()) ctx.fail("scan input " + std::to_string(k) + " needs a batch dimension");
      batch = s[0];
      s.erase(s.begin());
    }
    scan_shapes.push_back(s);
  }
  const int64_t len = sequence_length(node, scan_shapes, spec.in_axes);
  for (size_t k = 0; k < spec.scan_inputs; ++k) {
    body_in.push_back(TensorInfo{ctx.input(first + static_cast<int>(spec.states + k)).dtype,
                                 without_axis(scan_shapes[k], spec.in_axes[k]), nullptr});
  }
  const std::vector<TensorInfo> outs = infer_body(ctx, body, body_in, "body");
  auto batched = [&](Shape s) {
    if (batch_axes) s.insert(s.begin(), batch);
    return s;
  };
  for (size_t j = 0; j < spec.states; ++j) {
    if (outs[j].dtype != body_in[j].dtype) {
      ctx.fail("state " + std::to_string(j) + " starts as " + describe_info(body_in[j]) + " but the body returns " +
               describe_info(outs[j]));
    }
    if (outs[j].shape != body_in[j].shape && len > 0) {
      throw ValueNeededError(node.describe() + ": state " + std::to_string(j) + " changes shape from " +
                             shape_str(body_in[j].shape) + " to " + shape_str(outs[j].shape) + ": known only at run time");
    }
    ctx.set_output(static_cast<int>(j), body_in[j].dtype, batched(body_in[j].shape));
  }
  for (size_t k = 0; k < spec.scan_outputs; ++k) {
    const TensorInfo& o = outs[spec.states + k];
    ctx.set_output(static_cast<int>(spec.states + k), o.dtype,
                   batched(with_axis(o.shape, spec.out_axes[k], len, node)));
  }
}

// One scan (opset 9 semantics) over unbatched `states` and `scans`: final states, then stacked
// scan outputs.
std::vector<Tensor> run_scan(KernelContext& ctx, const Graph& body, ScanSpec spec, std::vector<Tensor> states,
                             const std::vector<Tensor>& scans) {
  SubgraphHost& host = host_of(ctx);
  const Node& node = ctx.node();
  std::vector<Shape> scan_shapes;
  for (const Tensor& t : scans) scan_shapes.push_back(t.shape());
  const int64_t len = sequence_length(node, scan_shapes, spec.in_axes);
  std::vector<Stacker> stacks;
  for (size_t k = 0; k < spec.scan_outputs; ++k) {
    stacks.emplace_back(len, static_cast<int>(spec.out_axes[k]), spec.out_reverse[k] != 0);
  }
  std::vector<Tensor> inputs(spec.states + spec.scan_inputs);
  for (size_t j = 0; j < spec.states; ++j) inputs[j] = states[j];
  for (int64_t i = 0; i < len; ++i) {
    for (size_t k = 0; k < spec.scan_inputs; ++k) {
      const int64_t pos = spec.in_reverse[k] ? len - 1 - i : i;
      inputs[spec.states + k] = slice_along(scans[k], static_cast<int>(spec.in_axes[k]), pos);
    }
    std::vector<Tensor> outs =
        in_subgraph(node, [&] { return "body (iteration " + std::to_string(i) + ")"; }, [&] { return host.run(body, inputs); });
    check_result_count(ctx, outs, body.outputs.size(), "body");
    for (size_t j = 0; j < spec.states; ++j) {
      if (outs[j].dtype() != inputs[j].dtype()) {
        ctx.fail("state " + std::to_string(j) + " is " + std::string(dtype_name(inputs[j].dtype())) + " but iteration " +
                 std::to_string(i) + " returned " + std::string(dtype_name(outs[j].dtype())));
      }
      carry(inputs[j], outs[j]);
    }
    for (size_t k = 0; k < spec.scan_outputs; ++k) stacks[k].add(ctx, static_cast<int>(spec.states + k), outs[spec.states + k]);
  }
  std::vector<Tensor> results(inputs.begin(), inputs.begin() + static_cast<std::ptrdiff_t>(spec.states));
  for (size_t k = 0; k < spec.scan_outputs; ++k) {
    if (stacks[k].started()) {
      results.push_back(stacks[k].result());
      continue;
    }
    std::vector<TensorInfo> body_in = infos_of(std::vector<Tensor>(inputs.begin(), inputs.begin() + static_cast<std::ptrdiff_t>(spec.states)));
    for (size_t m = 0; m < spec.scan_inputs; ++m) {
      body_in.push_back(TensorInfo{scans[m].dtype(), without_axis(scans[m].shape(), spec.in_axes[m]), nullptr});
    }
    const TensorInfo item = zero_trip_item(ctx, body, body_in, spec.states + k);
    results.push_back(stacks[k].empty(item.dtype, item.shape));
  }
  return results;
}

void scan_kernel(KernelContext& ctx) {
  const Node& node = ctx.node();
  const Graph& body = subgraph_attr(node, "body");
  const ScanSpec spec = scan_spec(node, body, ctx.has_input(0) ? ctx.input(0).dtype() : DType::kUnknown);
  const int first = spec.batched ? 1 : 0;
  std::vector<Tensor> states, scans;
  for (size_t j = 0; j < spec.states; ++j) states.push_back(ctx.input(first + static_cast<int>(j)));
  for (size_t k = 0; k < spec.scan_inputs; ++k) scans.push_back(ctx.input(first + static_cast<int>(spec.states + k)));
  if (!spec.batched) {
    const std::vector<Tensor> results = run_scan(ctx, body, spec, std::move(states), scans);
    for (int i = 0; i < ctx.num_outputs(); ++i) set_result(ctx, i, results[static_cast<size_t>(i)]);
    return;
  }
  // Opset 8: dim 0 is the batch; each batch entry is one scan over its own slices.
  const int64_t batch = scans[0].rank() ? scans[0].dim(0) : -1;
  for (const std::vector<Tensor>* group : {&states, &scans}) {
    for (const Tensor& t : *group) {
      if (t.rank() < 1 || t.dim(0) != batch) {
        ctx.fail("opset 8 Scan: every input needs the same batch dimension, got " + shape_str(t.shape()) + " and " +
                 shape_str(scans[0].shape()));
      }
    }
  }
  if (ctx.has_input(0)) {
    const std::vector<int64_t> lens = ctx.input(0).to_int_vector();
    for (int64_t l : lens) {
      if (l != scans[0].dim(1)) ctx.unsupported("opset 8 Scan with sequence_lens shorter than the sequence");
    }
  }
  std::vector<Stacker> per_output;
  for (size_t i = 0; i < spec.states + spec.scan_outputs; ++i) per_output.emplace_back(batch, 0, false);
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Tensor> s, x;
    for (const Tensor& t : states) s.push_back(slice_along(t, 0, b));
    for (const Tensor& t : scans) x.push_back(slice_along(t, 0, b));
    const std::vector<Tensor> results = run_scan(ctx, body, spec, std::move(s), x);
    for (size_t i = 0; i < results.size(); ++i) per_output[i].add(ctx, static_cast<int>(i), results[i]);
  }
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    if (!ctx.has_output(i)) continue;
    if (batch == 0) ctx.unsupported("opset 8 Scan over an empty batch");
    set_result(ctx, i, per_output[static_cast<size_t>(i)].result());
  }
}

OpSchema control_flow_schema(const char* type, int min_inputs, int max_inputs, InferFn infer, KernelFn kernel,
                             const char* doc) {
  OpSchema s = make_schema(type, min_inputs, max_inputs, std::move(infer), std::move(kernel), {}, doc);
  s.min_outputs = 1;
  s.max_outputs = OpSchema::kVariadic;
  s.has_subgraphs = true;
  return s;
}

}  // namespace

void register_control_flow_ops(OpRegistry& r) {
  r.add(control_flow_schema("If", 1, 1, infer_if, if_kernel,
                            "runs then_branch or else_branch on a one-element bool condition"));
  r.add(control_flow_schema("Loop", 0, OpSchema::kVariadic, infer_loop, loop_kernel,
                            "runs body while i < M and cond; carries values, stacks scan outputs"));
  r.add(control_flow_schema("Scan", 1, OpSchema::kVariadic, infer_scan, scan_kernel,
                            "runs body over slices of the scan inputs; carries states, stacks scan outputs"));
}

}  // namespace xnn
