#include "engine/train/autograd.h"

#include <cstring>

#include "engine/core/error.h"

namespace xnn::train {

Tensor& NodeState::slot(size_t i, DType dtype, const Shape& shape) {
  if (saved.size() <= i) saved.resize(i + 1);
  Tensor& t = saved[i];
  if (!t.defined() || t.dtype() != dtype || t.shape() != shape) t = Tensor(dtype, shape);
  return t;
}

void BackwardContext::unsupported(const std::string& msg) const {
  throw UnsupportedError("training: " + node.describe() + ": " + msg);
}

const GradRegistry& GradRegistry::builtin() {
  static const GradRegistry registry = [] {
    GradRegistry r;
    register_activation_grads(r);
    register_elementwise_grads(r);
    register_conv_grads(r);
    register_gemm_grads(r);
    register_normalization_grads(r);
    register_pool_grads(r);
    register_shape_grads(r);
    register_quantize_grads(r);
    return r;
  }();
  return registry;
}

namespace {
std::string grad_key(const std::string& domain, const std::string& type) { return domain.empty() ? type : domain + "::" + type; }
}  // namespace

void GradRegistry::add(GradOp op) { add(std::move(op), ""); }

void GradRegistry::add(GradOp op, const std::string& domain) {
  const std::string key = grad_key(domain, op.type);
  if (!ops_.emplace(key, std::move(op)).second) throw Error("GradRegistry: op '" + key + "' registered twice");
}

const GradOp* GradRegistry::find(const std::string& type) const {
  auto it = ops_.find(type);
  return it == ops_.end() ? nullptr : &it->second;
}

const GradOp* GradRegistry::find(const Node& node) const {
  auto it = ops_.find(grad_key(node.domain, node.op_type));
  return it == ops_.end() ? nullptr : &it->second;
}

std::vector<std::string> GradRegistry::op_types() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : ops_) out.push_back(k);
  return out;
}

void reduce_to_shape(const Tensor& grad, Tensor& out) {
  const Shape& gs = grad.shape();
  const Shape& os = out.shape();
  float* o = out.data<float>();
  const float* g = grad.data<float>();
  if (gs == os) {
    std::memcpy(o, g, grad.nbytes());
    return;
  }
  std::memset(o, 0, out.nbytes());
  // Right-align the operand's dims with the gradient's; a dim of size 1 (or missing) is summed.
  const int rank = static_cast<int>(gs.size());
  const int lead = rank - static_cast<int>(os.size());
  XNN_CHECK(lead >= 0, "reduce_to_shape: operand rank exceeds gradient rank");
  std::vector<int64_t> ostride(static_cast<size_t>(rank), 0);
  int64_t s = 1;
  for (int d = rank - 1; d >= lead; --d) {
    const int64_t od = os[static_cast<size_t>(d - lead)];
    XNN_CHECK(od == 1 || od == gs[static_cast<size_t>(d)], "reduce_to_shape: shapes do not broadcast");
    ostride[static_cast<size_t>(d)] = od == 1 ? 0 : s;
    s *= od;
  }
  // Walk the gradient with an odometer over all but the innermost dim.
  const int64_t inner = rank ? gs[static_cast<size_t>(rank - 1)] : 1;
  const int64_t inner_stride = rank ? ostride[static_cast<size_t>(rank - 1)] : 0;
  const int64_t outer = grad.numel() / std::max<int64_t>(inner, 1);
  std::vector<int64_t> idx(static_cast<size_t>(rank), 0);
  for (int64_t r = 0; r < outer; ++r) {
    int64_t base = 0;
    for (int d = 0; d < rank - 1; ++d) base += idx[static_cast<size_t>(d)] * ostride[static_cast<size_t>(d)];
    const float* gr = g + r * inner;
    if (inner_stride == 0) {
      float acc = 0;
      for (int64_t i = 0; i < inner; ++i) acc += gr[i];
      o[base] += acc;
    } else {
      for (int64_t i = 0; i < inner; ++i) o[base + i] += gr[i];
    }
    for (int d = rank - 2; d >= 0; --d) {
      if (++idx[static_cast<size_t>(d)] < gs[static_cast<size_t>(d)]) break;
      idx[static_cast<size_t>(d)] = 0;
    }
  }
}

}  // namespace xnn::train
