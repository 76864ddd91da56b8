// Weight-only quantised ops (domain ai.xnn): float activations against weights stored as
// unsigned 4- or 8-bit codes per row, each row with its own scale and offset (asymmetric, as
// FBGEMM's row-wise embedding tables): w[r][c] = scale[r] · q[r][c] + offset[r]. The weights stay
// quantised in memory and are dequantised on the fly, which is what pays for memory-bound
// layers (batch-1 fully connected layers, embedding tables) where reading the weights dominates.
//
//   RowQuantizedGather(codes, scale, offset, indices)            attrs bits (4|8), cols
//       codes  u8 [V, row_bytes]   row_bytes = cols (8 bits) or ceil(cols / 2) (4 bits: element
//                                  2j in the low nibble of byte j, 2j+1 in the high one)
//       scale, offset  f16|f32 [V]
//       Y = rows `indices` of the dequantised table: f32 [indices..., cols]   (Gather axis 0)
//   RowQuantizedGemm(A, codes, scale, offset, bias?)             attrs bits, cols
//       A f32 [..., K] with K = cols; codes u8 [N, row_bytes]; scale, offset [N]; bias f32 [N]
//       Y[..., n] = Σ_k A[..., k] · w[n][k] + bias[n]   (= A·Wᵀ + b, PyTorch Linear)
//                 = scale[n] · Σ_k A·q[n][k] + offset[n] · Σ_k A + bias[n]
//
// compress/quantize/weight_only.h rewrites Gather/Gemm/MatMul with constant float weights into
// these ops.
#include <cmath>
#include <string>
#include <vector>

#include "engine/core/half.h"
#include "engine/kernels/row_quantized.h"
#include "engine/ops/nn_common.h"
#include "engine/ops/op_helpers.h"
#include "engine/ops/tensor_ops.h"
#include "engine/ops/weight_only_common.h"

namespace xnn {
namespace {

constexpr const char* kXnnDomain = "ai.xnn";

int64_t checked_bits(const Node& node) {
  const int64_t bits = node.attr_int("bits", 8);
  if (bits != 4 && bits != 8) fail_node(node, "bits must be 4 or 8, got " + std::to_string(bits));
  return bits;
}

using weight_only::checked_cols;

// codes [rows, row_bytes], scale [rows], offset [rows]; returns rows.
int64_t check_table(InferContext& ctx, int codes_i, int64_t bits, int64_t cols) {
  const TensorInfo& codes = ctx.input(codes_i);
  if (codes.dtype != DType::kU8) ctx.fail("codes must be uint8, got " + std::string(dtype_name(codes.dtype)));
  if (codes.shape.size() != 2) ctx.fail("codes must be 2-D [rows, row_bytes], got " + shape_str(codes.shape));
  const int64_t rows = codes.shape[0];
  const int64_t row_bytes = kernels::row_quantized_bytes(cols, static_cast<int>(bits));
  if (codes.shape[1] != row_bytes) {
    ctx.fail("codes have " + std::to_string(codes.shape[1]) + " bytes per row; " + std::to_string(cols) + " " +
             std::to_string(bits) + "-bit codes take " + std::to_string(row_bytes));
  }
  for (int i : {codes_i + 1, codes_i + 2}) {
    const TensorInfo& p = ctx.input(i);
    const char* what = i == codes_i + 1 ? "scale" : "offset";
    if (p.dtype != DType::kF32 && p.dtype != DType::kF16) {
      ctx.fail(std::string(what) + " must be float32 or float16, got " + std::string(dtype_name(p.dtype)));
    }
    if (p.shape != Shape{rows}) ctx.fail(std::string(what) + " must be [" + std::to_string(rows) + "], got " + shape_str(p.shape));
  }
  return rows;
}

// Row parameters as float, whatever their stored dtype.
std::vector<float> row_params(const Tensor& t) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  if (t.dtype() == DType::kF16) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(t.data<Half>()[i]);
  } else {
    for (size_t i = 0; i < out.size(); ++i) out[i] = t.data<float>()[i];
  }
  return out;
}

// ---- RowQuantizedGather --------------------------------------------------------------------

void infer_row_quantized_gather(InferContext& ctx) {
  const int64_t bits = checked_bits(ctx.node()), cols = checked_cols(ctx.node());
  check_table(ctx, 0, bits, cols);
  weight_only::infer_gather_output(ctx, 3, cols);
}

void run_row_quantized_gather(KernelContext& ctx) {
  const int bits = static_cast<int>(checked_bits(ctx.node()));
  const int64_t cols = checked_cols(ctx.node());
  const Tensor& codes = ctx.input(0);
  const int64_t rows = codes.dim(0), row_bytes = codes.dim(1);
  const std::vector<float> scale = row_params(ctx.input(1)), offset = row_params(ctx.input(2));
  const Tensor& indices = ctx.input(3);
  float* out = ctx.output(0).data<float>();
  for (int64_t i = 0; i < indices.numel(); ++i) {
    const int64_t r = weight_only::table_row(ctx, indices, i, rows);
    kernels::dequantize_row(codes.data<uint8_t>() + r * row_bytes, bits, cols, scale[static_cast<size_t>(r)],
                            offset[static_cast<size_t>(r)], out + i * cols);
  }
}

OpCost row_quantized_gather_cost(const Node& node, std::span<const TensorInfo> in, std::span<const TensorInfo> out) {
  const int64_t bits = node.attr_int("bits", 8), cols = node.attr_int("cols", 1);
  const double lookups = static_cast<double>(shape_numel(in[3].shape));
  OpCost c;
  c.macs = static_cast<double>(shape_numel(out[0].shape));  // one multiply-add per element
  c.bytes_read = lookups * (static_cast<double>(kernels::row_quantized_bytes(cols, static_cast<int>(bits))) +
                            2.0 * static_cast<double>(dtype_size(in[1].dtype)) + static_cast<double>(dtype_size(in[3].dtype)));
  c.bytes_written = static_cast<double>(shape_numel(out[0].shape)) * 4;
  return c;
}

// ---- RowQuantizedGemm ----------------------------------------------------------------------

void infer_row_quantized_gemm(InferContext& ctx) {
  const int64_t bits = checked_bits(ctx.node()), cols = checked_cols(ctx.node());
  weight_only::infer_gemm_output(ctx, cols, check_table(ctx, 1, bits, cols), 4);
}

void run_row_quantized_gemm(KernelContext& ctx) {
  const int bits = static_cast<int>(checked_bits(ctx.node()));
  const Tensor& a = ctx.input(0);
  const Tensor& codes = ctx.input(1);
  const int64_t k = a.shape().back(), m = a.numel() / k, n = codes.dim(0);
  const std::vector<float> scale = row_params(ctx.input(2)), offset = row_params(ctx.input(3));
  const float* bias = ctx.has_input(4) ? ctx.input(4).data<float>() : nullptr;
  kernels::RowQuantizedWeights w{codes.data<uint8_t>(), bits, n, k, codes.dim(1), scale.data(), offset.data()};
  kernels::row_quantized_gemm_reference(a.data<float>(), m, w, bias, ctx.output(0).data<float>());
}

OpCost row_quantized_gemm_cost(const Node& node, std::span<const TensorInfo> in, std::span<const TensorInfo> out) {
  const int64_t bits = node.attr_int("bits", 8), cols = node.attr_int("cols", 1);
  const double n = static_cast<double>(in[1].shape.empty() ? 0 : in[1].shape[0]);
  OpCost c;
  c.macs = static_cast<double>(shape_numel(out[0].shape)) * static_cast<double>(cols);
  c.bytes_read = static_cast<double>(shape_numel(in[0].shape)) * 4 +
                 n * (static_cast<double>(kernels::row_quantized_bytes(cols, static_cast<int>(bits))) +
                      2.0 * static_cast<double>(dtype_size(in[2].dtype)) + 4.0);
  c.bytes_written = static_cast<double>(shape_numel(out[0].shape)) * 4;
  return c;
}

OpSchema xnn_op(OpSchema s) {
  s.domain = kXnnDomain;
  return s;
}

}  // namespace

void register_row_quantized_ops(OpRegistry& r) {
  r.add(xnn_op(make_schema("RowQuantizedGather", 4, 4, infer_row_quantized_gather, run_row_quantized_gather,
                           row_quantized_gather_cost,
                           "Embedding lookup in a row-wise 4/8-bit table: rows `indices` of scale[r]·q[r] + offset[r]")));
  r.add(xnn_op(make_schema("RowQuantizedGemm", 4, 5, infer_row_quantized_gemm, run_row_quantized_gemm,
                           row_quantized_gemm_cost,
                           "A·Wᵀ + bias with W stored as row-wise 4/8-bit codes (scale, offset per row), dequantised on the fly")));
}

}  // namespace xnn
