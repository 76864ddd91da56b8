#include "harness/eval/evaluate.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <map>

#include "engine/core/error.h"

namespace xnn::eval {

AccuracyResult evaluate_classifier(Session& session, const data::Dataset& ds, const data::Preprocess& p,
                                   int64_t batch_size) {
  if (session.inputs().size() != 1) {
    std::string names;
    for (const IoInfo& in : session.inputs()) names += (names.empty() ? "" : ", ") + in.name;
    throw Error("evaluate: the model has " + std::to_string(session.inputs().size()) + " inputs (" + names +
                "), expected exactly one image input");
  }
  if (session.outputs().empty()) throw Error("evaluate: the model has no outputs");
  if (ds.count <= 0) throw Error("evaluate: the dataset is empty");
  if (batch_size < 0) throw Error("evaluate: batch size " + std::to_string(batch_size) + ", expected >= 0");
  const IoInfo& in = session.inputs()[0];
  if (in.dtype != DType::kF32) {
    throw Error("evaluate: input '" + in.name + "' has dtype " + std::string(dtype_name(in.dtype)) +
                ", expected f32 (a float image input)");
  }

  // The declared input shape with unknown / symbolic dims as -1; no declared shape: assume an
  // image tensor of rank 4 whose layout comes from the preprocessing options.
  Shape declared = in.has_shape ? Shape{} : Shape{-1, -1, -1, -1};
  for (const Dim& d : in.shape) declared.push_back(d.known() ? d.value : -1);
  if (declared.empty()) throw Error("evaluate: input '" + in.name + "' is a scalar, expected a batch of images");
  const int64_t fixed_batch = declared[0];  // -1 when symbolic
  if (fixed_batch == 0) throw Error("evaluate: input '" + in.name + "' has batch dim 0");

  int64_t batch = batch_size;
  if (fixed_batch > 0) {
    if (batch != 0 && batch != fixed_batch) {
      throw Error("evaluate: batch size " + std::to_string(batch) + " given, but input '" + in.name + "' has a fixed batch of " +
                  std::to_string(fixed_batch) + " " + dims_str(in.shape));
    }
    batch = fixed_batch;
  } else if (batch == 0) {
    batch = 64;
  }

  AccuracyResult r;
  int64_t top1 = 0, top5 = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t begin = 0; begin < ds.count; begin += batch) {
    const int64_t n = std::min(batch, ds.count - begin);
    Tensor x = data::make_batch(ds, begin, n, p, declared);
    if (fixed_batch > 0 && n < fixed_batch) {
      // A fixed batch dim: pad the last batch with zeros; the extra rows are not scored.
      Shape padded_shape = x.shape();
      padded_shape[0] = fixed_batch;
      Tensor padded(DType::kF32, padded_shape);
      std::memcpy(padded.raw(), x.raw(), x.nbytes());
      x = std::move(padded);
    }
    const int64_t rows = x.dim(0);
    std::vector<Tensor> outs = session.run({{in.name, x}});
    const Tensor& y = outs.at(0);
    const std::string out_name = session.outputs()[0].name;
    if (y.rank() < 1 || y.dim(0) != rows || y.numel() % rows != 0) {
      throw Error("evaluate: output '" + out_name + "' has shape " + shape_str(y.shape()) + ", expected [" +
                  std::to_string(rows) + "," + std::to_string(ds.num_classes) + "] (one row of class scores per image)");
    }
    const int64_t k = y.numel() / rows;
    if (k < ds.num_classes) {
      throw Error("evaluate: output '" + out_name + "' has " + std::to_string(k) + " scores per image (shape " +
                  shape_str(y.shape()) + "), expected at least " + std::to_string(ds.num_classes) + " classes");
    }
    Tensor scores = y;
    if (y.dtype() != DType::kF32) {
      scores = Tensor(DType::kF32, y.shape());
      convert_tensor(y, scores);
    }
    const float* s = scores.data<float>();
    for (int64_t i = 0; i < n; ++i) {
      const float* row = s + i * k;
      const int label = ds.labels[static_cast<size_t>(begin + i)];
      const float ref = row[label];
      // Rank of the true class: classes scoring higher, ties broken by index (as argmax).
      int64_t rank = 0;
      if (std::isnan(ref)) {
        rank = k;
      } else {
        for (int64_t j = 0; j < k; ++j) {
          if (row[j] > ref || (row[j] == ref && j < label)) ++rank;
        }
      }
      top1 += rank < 1;
      top5 += rank < 5;
    }
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.samples = ds.count;
  r.top1 = static_cast<double>(top1) / static_cast<double>(ds.count);
  r.top5 = static_cast<double>(top5) / static_cast<double>(ds.count);
  return r;
}

}  // namespace xnn::eval
