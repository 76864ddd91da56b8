// Codebook-quantised ops (domain ai.xnn): float activations against weights stored as k-means
// cluster indices of 1 to 8 bits into one float centroid table per tensor (Deep Compression's
// weight sharing, Han et al. 2016): w[r][c] = centroids[q[r][c]]. The indices stay packed in
// memory and are looked up on the fly (engine/kernels/codebook.h has the packing).
//
//   CodebookGather(codes, centroids, indices)        attrs bits (1..8), cols
//       codes      u8 [V, row_bytes]   row_bytes = codebook_row_bytes(cols, bits)
//       centroids  f32 [K], 1 <= K <= 2^bits; every code < K
//       Y = rows `indices` of the decoded table: f32 [indices..., cols]   (Gather axis 0)
//   CodebookGemm(A, codes, centroids, bias?)         attrs bits, cols
//       A f32 [..., K'] with K' = cols; codes u8 [N, row_bytes]; bias f32 [N]
//       Y[..., n] = Σ_k A[..., k] · centroids[q[n][k]] + bias[n]   (= A·Wᵀ + b, PyTorch Linear)
//
// compress/quantize/weight_only.h (codebook scheme) rewrites Gather/Gemm/MatMul with constant
// float weights into these ops.
#include <string>

#include "engine/kernels/codebook.h"
#include "engine/ops/nn_common.h"
#include "engine/ops/op_helpers.h"
#include "engine/ops/tensor_ops.h"
#include "engine/ops/weight_only_common.h"

namespace xnn {
namespace {

int64_t checked_bits(const Node& node) {
  const int64_t bits = node.attr_int("bits", 4);
  if (bits < 1 || bits > 8) fail_node(node, "bits must be in 1..8, got " + std::to_string(bits));
  return bits;
}

using weight_only::checked_cols;

// codes [rows, row_bytes] and centroids [K]; returns rows.
int64_t check_codebook(InferContext& ctx, int codes_i, int64_t bits, int64_t cols) {
  const TensorInfo& codes = ctx.input(codes_i);
  if (codes.dtype != DType::kU8) ctx.fail("codes must be uint8, got " + std::string(dtype_name(codes.dtype)));
  if (codes.shape.size() != 2) ctx.fail("codes must be 2-D [rows, row_bytes], got " + shape_str(codes.shape));
  const int64_t row_bytes = kernels::codebook_row_bytes(cols, static_cast<int>(bits));
  if (codes.shape[1] != row_bytes) {
    ctx.fail("codes have " + std::to_string(codes.shape[1]) + " bytes per row; " + std::to_string(cols) + " " +
             std::to_string(bits) + "-bit codes take " + std::to_string(row_bytes));
  }
  const TensorInfo& centroids = ctx.input(codes_i + 1);
  if (centroids.dtype != DType::kF32 || centroids.shape.size() != 1) {
    ctx.fail("centroids must be float32 [K], got " + std::string(dtype_name(centroids.dtype)) + " " +
             shape_str(centroids.shape));
  }
  const int64_t k = centroids.shape[0];
  if (k < 1 || k > (int64_t{1} << bits)) {
    ctx.fail("centroids has " + std::to_string(k) + " entries; " + std::to_string(bits) + "-bit codes address 1 to " +
             std::to_string(int64_t{1} << bits));
  }
  return codes.shape[0];
}

// Throws unless every code of `codes` addresses one of the centroids.
void check_codes_in_range(KernelContext& ctx, const Tensor& codes, int bits, int64_t cols, int64_t num_centroids) {
  const int64_t rows = codes.dim(0), row_bytes = codes.dim(1);
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* row = codes.data<uint8_t>() + r * row_bytes;
    for (int64_t c = 0; c < cols; ++c) {
      if (kernels::codebook_code(row, bits, c) >= num_centroids) {
        ctx.fail("code " + std::to_string(kernels::codebook_code(row, bits, c)) + " at row " + std::to_string(r) +
                 ", column " + std::to_string(c) + " is past the " + std::to_string(num_centroids) + " centroids");
      }
    }
  }
}

// ---- CodebookGather ------------------------------------------------------------------------

void infer_codebook_gather(InferContext& ctx) {
  const int64_t bits = checked_bits(ctx.node()), cols = checked_cols(ctx.node());
  check_codebook(ctx, 0, bits, cols);
  weight_only::infer_gather_output(ctx, 2, cols);
}

void run_codebook_gather(KernelContext& ctx) {
  const int bits = static_cast<int>(checked_bits(ctx.node()));
  const int64_t cols = checked_cols(ctx.node());
  const Tensor& codes = ctx.input(0);
  const Tensor& centroids = ctx.input(1);
  const int64_t rows = codes.dim(0), row_bytes = codes.dim(1);
  check_codes_in_range(ctx, codes, bits, cols, centroids.numel());
  const Tensor& indices = ctx.input(2);
  float* out = ctx.output(0).data<float>();
  for (int64_t i = 0; i < indices.numel(); ++i) {
    const int64_t r = weight_only::table_row(ctx, indices, i, rows);
    kernels::decode_codebook_row(codes.data<uint8_t>() + r * row_bytes, bits, cols, centroids.data<float>(),
                                 out + i * cols);
  }
}

OpCost codebook_gather_cost(const Node& node, std::span<const TensorInfo> in, std::span<const TensorInfo> out) {
  const int64_t bits = node.attr_int("bits", 4), cols = node.attr_int("cols", 1);
  const double lookups = static_cast<double>(shape_numel(in[2].shape));
  OpCost c;
  c.macs = 0;
  c.bytes_read = lookups * (static_cast<double>(kernels::codebook_row_bytes(cols, static_cast<int>(bits))) +
                            static_cast<double>(dtype_size(in[2].dtype))) +
                 static_cast<double>(shape_numel(in[1].shape)) * 4;
  c.bytes_written = static_cast<double>(shape_numel(out[0].shape)) * 4;
  return c;
}

// ---- CodebookGemm --------------------------------------------------------------------------

void infer_codebook_gemm(InferContext& ctx) {
  const int64_t bits = checked_bits(ctx.node()), cols = checked_cols(ctx.node());
  weight_only::infer_gemm_output(ctx, cols, check_codebook(ctx, 1, bits, cols), 3);
}

void run_codebook_gemm(KernelContext& ctx) {
  const int bits = static_cast<int>(checked_bits(ctx.node()));
  const Tensor& a = ctx.input(0);
  const Tensor& codes = ctx.input(1);
  const Tensor& centroids = ctx.input(2);
  const int64_t k = a.shape().back(), m = a.numel() / k, n = codes.dim(0);
  check_codes_in_range(ctx, codes, bits, k, centroids.numel());
  const float* bias = ctx.has_input(3) ? ctx.input(3).data<float>() : nullptr;
  const kernels::CodebookWeights w{codes.data<uint8_t>(), bits, n, k, codes.dim(1), centroids.data<float>(),
                                   centroids.numel()};
  kernels::codebook_gemm_reference(a.data<float>(), m, w, bias, ctx.output(0).data<float>());
}

OpCost codebook_gemm_cost(const Node& node, std::span<const TensorInfo> in, std::span<const TensorInfo> out) {
  const int64_t bits = node.attr_int("bits", 4), cols = node.attr_int("cols", 1);
  const double n = static_cast<double>(in[1].shape.empty() ? 0 : in[1].shape[0]);
  OpCost c;
  c.macs = static_cast<double>(shape_numel(out[0].shape)) * static_cast<double>(cols);
  c.bytes_read = static_cast<double>(shape_numel(in[0].shape)) * 4 +
                 n * (static_cast<double>(kernels::codebook_row_bytes(cols, static_cast<int>(bits))) + 4.0) +
                 static_cast<double>(shape_numel(in[2].shape)) * 4;
  c.bytes_written = static_cast<double>(shape_numel(out[0].shape)) * 4;
  return c;
}

OpSchema xnn_op(OpSchema s) {
  s.domain = "ai.xnn";
  return s;
}

}  // namespace

void register_codebook_ops(OpRegistry& r) {
  r.add(xnn_op(make_schema("CodebookGather", 3, 3, infer_codebook_gather, run_codebook_gather, codebook_gather_cost,
                           "Embedding lookup in a k-means codebook table: rows `indices` of centroids[q[r]]")));
  r.add(xnn_op(make_schema("CodebookGemm", 3, 4, infer_codebook_gemm, run_codebook_gemm, codebook_gemm_cost,
                           "A·Wᵀ + bias with W stored as 1-8-bit k-means indices into a centroid table, looked up on the fly")));
}

}  // namespace xnn
