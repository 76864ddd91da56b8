#include "harness/predict/model_features.h"

#include "engine/core/error.h"
#include "engine/passes/optimize.h"
#include "engine/runtime/graph_cost.h"
#include "engine/runtime/model_io.h"

namespace xnn::predict {

std::map<std::string, std::string> fused_activations(const Graph& optimized) {
  std::map<std::string, std::string> acts;
  for (const Node& n : optimized.nodes) {
    const std::string a = n.attr_string("activation", "");
    if (!a.empty()) acts[n.name] = a;
  }
  return acts;
}

namespace {
const std::string& activation_of(const std::map<std::string, std::string>& acts, const std::string& node) {
  static const std::string none;
  const auto it = acts.find(node);
  return it == acts.end() ? none : it->second;
}
}  // namespace

std::vector<OpFeatures> featurize_plan(const std::vector<NodeProfile>& plan,
                                       const std::map<std::string, std::string>& activations) {
  std::vector<OpFeatures> ops;
  ops.reserve(plan.size());
  for (const NodeProfile& p : plan) {
    ops.push_back(featurize_op(p.name, p.op_type, p.kernel, OpShapes{p.input_shapes, p.output_shapes},
                               activation_of(activations, p.name)));
  }
  return ops;
}

std::vector<OpFeatures> featurize_profile(const std::vector<OpProfileRow>& rows,
                                          const std::map<std::string, std::string>& activations) {
  std::vector<OpFeatures> ops;
  ops.reserve(rows.size());
  for (const OpProfileRow& r : rows) {
    OpShapes shapes;
    try {
      shapes = parse_shapes_text(r.shapes);
    } catch (const Error& e) {
      throw Error("profile of node '" + r.node_name + "': " + e.what());
    }
    ops.push_back(featurize_op(r.node_name, r.op_type, r.kernel, shapes, activation_of(activations, r.node_name)));
  }
  return ops;
}

std::vector<OpFeatures> featurize_model(std::shared_ptr<const Model> model, int threads) {
  SessionOptions opts;
  opts.threads = threads;
  Session session(std::move(model), opts);
  std::map<std::string, Shape> shapes;
  for (const IoInfo& in : session.inputs()) {
    Shape s;
    for (const Dim& d : in.shape) s.push_back(d.known() ? d.value : 1);
    shapes[in.name] = s;
  }
  session.prepare(shapes);
  const std::vector<NodeProfile> plan = session.plan_summary();
  if (plan.empty() && !session.optimized_graph().nodes.empty()) {
    throw Error("model '" + session.model().graph.name +
                "' has no static execution plan (data-dependent shapes): its latency cannot be predicted");
  }
  return featurize_plan(plan, fused_activations(session.optimized_graph()));
}

std::vector<OpFeatures> featurize_model_file(const std::string& path, int threads) {
  return featurize_model(load_model(path), threads);
}

std::map<std::string, std::string> fused_activations_of_file(const std::string& path) {
  auto model = load_model(path);
  optimize_graph(model->graph, SessionOptions{}.opt_level);
  return fused_activations(model->graph);
}

}  // namespace xnn::predict
