// The neural-network op family, one file per kind of op (see nn_common.h).
#include "engine/ops/nn_common.h"

namespace xnn {

void register_nn_ops(OpRegistry& r) {
  register_conv_ops(r);
  register_gemm_ops(r);
  register_pool_ops(r);
  register_normalization_ops(r);
  register_softmax_ops(r);
  register_quantization_ops(r);
  register_quantized_matmul_ops(r);
  register_quantized_conv_ops(r);
  register_quantized_contrib_ops(r);
  register_row_quantized_ops(r);
  register_codebook_ops(r);
  register_fake_quantize_ops(r);
}

}  // namespace xnn
