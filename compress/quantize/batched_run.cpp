#include "compress/quantize/batched_run.h"

#include <algorithm>
#include <cstring>

#include "engine/core/error.h"

namespace xnn::quantize {
namespace {

const IoInfo& single_input(const Session& s) {
  if (s.inputs().size() != 1) {
    throw Error("quantisation expects a model with one input, this one has " + std::to_string(s.inputs().size()));
  }
  return s.inputs()[0];
}

// Copies rows [begin, begin + count) of `samples` into a batch of `rows` rows, repeating the
// last sample to fill it.
Tensor padded_batch(const Tensor& samples, int64_t begin, int64_t count, int64_t rows) {
  if (count == rows) return samples.slice_outer(begin, begin + count);
  Shape shape = samples.shape();
  shape[0] = rows;
  Tensor out(samples.dtype(), shape);
  const size_t row_bytes = samples.nbytes() / static_cast<size_t>(samples.dim(0));
  auto* dst = static_cast<char*>(out.raw());
  const auto* src = static_cast<const char*>(samples.raw());
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t from = begin + std::min(r, count - 1);
    std::memcpy(dst + static_cast<size_t>(r) * row_bytes, src + static_cast<size_t>(from) * row_bytes, row_bytes);
  }
  return out;
}

}  // namespace

int64_t batch_size_for(const Session& session, int64_t requested) {
  const IoInfo& in = single_input(session);
  const bool fixed = in.has_shape && !in.shape.empty() && in.shape[0].known();
  if (fixed) {
    const int64_t b = in.shape[0].value;
    if (requested > 0 && requested != b) {
      throw Error("batch size " + std::to_string(requested) + " requested, but model input '" + in.name +
                  "' has a fixed batch of " + std::to_string(b));
    }
    return b;
  }
  return requested > 0 ? requested : 64;
}

void run_batched(Session& session, const Tensor& samples, int64_t batch,
                 const std::function<void(int64_t, int64_t, const std::vector<Tensor>&)>& fn) {
  const IoInfo& in = single_input(session);
  if (samples.dtype() != DType::kF32) {
    throw Error("samples for model input '" + in.name + "' have dtype " + std::string(dtype_name(samples.dtype())) +
                ", expected f32");
  }
  if (in.has_shape && samples.rank() != static_cast<int>(in.shape.size())) {
    throw Error("samples of shape " + shape_str(samples.shape()) + " do not fit model input '" + in.name + "' " +
                dims_str(in.shape) + " (expected [N, ...] with the input's rank)");
  }
  if (in.has_shape) {
    for (size_t d = 1; d < in.shape.size(); ++d) {
      if (in.shape[d].known() && in.shape[d].value != samples.dim(static_cast<int>(d))) {
        throw Error("samples of shape " + shape_str(samples.shape()) + " do not fit model input '" + in.name + "' " +
                    dims_str(in.shape) + " (dimension " + std::to_string(d) + ")");
      }
    }
  }
  const int64_t b = batch_size_for(session, batch);
  const int64_t n = samples.dim(0);
  for (int64_t begin = 0; begin < n; begin += b) {
    const int64_t count = std::min(b, n - begin);
    const bool fixed = in.has_shape && in.shape[0].known();
    const Tensor x = padded_batch(samples, begin, count, fixed ? b : count);
    std::vector<Tensor> outs = session.run({{in.name, x}});
    if (fixed && count < b) {
      for (Tensor& t : outs) {
        if (t.rank() > 0 && t.dim(0) == b) t = t.slice_outer(0, count);
      }
    }
    fn(begin, count, outs);
  }
}

Tensor run_first_output(const Model& model, const Tensor& samples, const BatchOptions& options) {
  SessionOptions so;
  so.threads = options.threads;
  Session session(std::make_shared<Model>(model), so);
  Tensor out;
  int64_t row = 0;
  run_batched(session, samples, options.batch, [&](int64_t begin, int64_t count, const std::vector<Tensor>& outs) {
    const Tensor& y = outs.at(0);
    if (y.rank() == 0 || y.dim(0) != count) {
      throw Error("model output '" + session.outputs()[0].name + "' has shape " + shape_str(y.shape()) +
                  ", expected the batch (" + std::to_string(count) + ") first");
    }
    if (!out.defined()) {
      Shape shape = y.shape();
      shape[0] = samples.dim(0);
      out = Tensor(y.dtype(), shape);
      row = static_cast<int64_t>(y.nbytes()) / count;
    }
    std::memcpy(static_cast<char*>(out.raw()) + begin * row, y.raw(), static_cast<size_t>(count * row));
  });
  return out;
}

}  // namespace xnn::quantize
