#include "harness/data/batch_loader.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "engine/core/error.h"

namespace xnn::data {
namespace {

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;
// Domain tags keep the shuffle and augmentation streams apart even for equal (seed, epoch).
constexpr uint64_t kShuffleDomain = 0x53485546464c4531ULL;  // "SHUFFLE1"
constexpr uint64_t kAugmentDomain = 0x4155474d454e5431ULL;  // "AUGMENT1"

// The splitmix64 finaliser: a bijection on 64 bits with good avalanche.
uint64_t finalise(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Folds `v` into the running key `h`. Hashing v on its own first keeps small neighbouring
// values (epochs 0, 1, 2; positions) from producing related keys.
uint64_t combine(uint64_t h, uint64_t v) { return finalise(h ^ finalise(v + kGolden)); }

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t key) : state_(key) {}
  uint64_t next() {
    state_ += kGolden;
    return finalise(state_);
  }
  // Uniform in [0, n), n > 0: Lemire's multiply-shift, rejecting the few low products that
  // would bias it. Spelled out so that the sequence is the same with every standard library.
  uint64_t below(uint64_t n) {
    __uint128_t m = static_cast<__uint128_t>(next()) * n;
    uint64_t low = static_cast<uint64_t>(m);
    if (low < n) {
      const uint64_t threshold = (0 - n) % n;  // 2^64 mod n
      while (low < threshold) {
        m = static_cast<__uint128_t>(next()) * n;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }

 private:
  uint64_t state_;
};

std::string option_error(const std::string& option, const std::string& what) {
  return "batch loader: " + option + " " + what;
}

}  // namespace

AugmentDraw draw_augment(uint64_t seed, int64_t epoch, int64_t position, const Augment& augment) {
  SplitMix64 rng(combine(combine(combine(seed, kAugmentDomain), static_cast<uint64_t>(epoch)),
                         static_cast<uint64_t>(position)));
  // Always three draws, whatever is enabled, so that turning one augmentation on or off does
  // not change the choices of the other.
  const uint64_t span = 2 * static_cast<uint64_t>(std::max(augment.pad_crop, 0)) + 1;
  AugmentDraw d;
  d.crop_y = static_cast<int64_t>(rng.below(span));
  d.crop_x = static_cast<int64_t>(rng.below(span));
  d.flip = augment.hflip && (rng.next() >> 63) != 0;
  return d;
}

std::vector<int64_t> epoch_order(int64_t count, uint64_t seed, int64_t epoch, bool shuffle) {
  std::vector<int64_t> order(static_cast<size_t>(std::max<int64_t>(count, 0)));
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  if (!shuffle) return order;
  SplitMix64 rng(combine(combine(seed, kShuffleDomain), static_cast<uint64_t>(epoch)));
  for (size_t i = order.size(); i > 1; --i) {
    const size_t j = static_cast<size_t>(rng.below(i));
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

BatchLoader::BatchLoader(const Dataset& dataset, LoaderOptions options)
    : dataset_(dataset), options_(std::move(options)) {
  const LoaderOptions& o = options_;
  if (o.batch_size <= 0) {
    throw Error(option_error("batch_size", "is " + std::to_string(o.batch_size) + ", expected > 0"));
  }
  if (o.augment.pad_crop < 0) {
    throw Error(option_error("augment.pad_crop", "is " + std::to_string(o.augment.pad_crop) + ", expected >= 0"));
  }
  if (o.prefetch < 0) {
    throw Error(option_error("prefetch", "is " + std::to_string(o.prefetch) +
                                             ", expected >= 0 (0 = prepare batches synchronously)"));
  }
  const Dataset& ds = dataset_;
  if (ds.count <= 0) throw Error("batch loader: the dataset is empty (count " + std::to_string(ds.count) + ")");
  if (ds.rows <= 0 || ds.cols <= 0) {
    throw Error("batch loader: the dataset's image size is " + std::to_string(ds.rows) + " x " +
                std::to_string(ds.cols) + ", expected non-empty images");
  }
  if (ds.images.size() != static_cast<size_t>(ds.count * ds.rows * ds.cols)) {
    throw Error("batch loader: the dataset holds " + std::to_string(ds.images.size()) + " pixel bytes, expected " +
                std::to_string(ds.count * ds.rows * ds.cols) + " (count " + std::to_string(ds.count) + " x " +
                std::to_string(ds.rows) + " x " + std::to_string(ds.cols) + ")");
  }
  if (ds.labels.size() != static_cast<size_t>(ds.count)) {
    throw Error("batch loader: the dataset holds " + std::to_string(ds.labels.size()) + " labels, expected " +
                std::to_string(ds.count) + " (one per image)");
  }
  // Checked once here so that a bad label fails at setup, not as an out-of-range class index
  // deep inside a loss function.
  for (size_t i = 0; i < ds.labels.size(); ++i) {
    if (ds.labels[i] >= ds.num_classes) {
      throw Error("batch loader: label " + std::to_string(ds.labels[i]) + " at index " + std::to_string(i) +
                  ", expected 0.." + std::to_string(ds.num_classes - 1) + " (num_classes " +
                  std::to_string(ds.num_classes) + ")");
    }
  }
  if (o.drop_last && ds.count < o.batch_size) {
    throw Error(option_error("drop_last", "with batch_size " + std::to_string(o.batch_size) + " leaves no batch: the dataset has only " +
                                              std::to_string(ds.count) + " samples"));
  }

  const Preprocess& p = o.preprocess;
  if (p.mean.size() != 1 || p.std.size() != 1) {
    throw Error(option_error("preprocess.mean/std", "have " + std::to_string(p.mean.size()) + " and " +
                                                        std::to_string(p.std.size()) +
                                                        " values, expected one each (the images have 1 channel)"));
  }
  const float mean = p.mean[0], stdv = p.std[0];
  if (!(stdv != 0.0f) || !std::isfinite(stdv)) {
    throw Error(option_error("preprocess.std", "is " + std::to_string(stdv) + ", expected finite and non-zero"));
  }
  if (!std::isfinite(mean) || !std::isfinite(p.scale)) {
    throw Error(option_error("preprocess.mean/scale", "must be finite"));
  }
  // A u8 pixel has 256 values: normalising through a table makes the per-pixel work one load,
  // and written exactly as make_batch does it so that both give the same floats.
  for (int v = 0; v < 256; ++v) lut_[v] = (static_cast<float>(v) * p.scale - mean) / stdv;
}

BatchLoader::~BatchLoader() { stop_worker(); }

int64_t BatchLoader::batches_per_epoch() const {
  const int64_t n = dataset_.count, bs = options_.batch_size;
  return options_.drop_last ? n / bs : (n + bs - 1) / bs;
}

void BatchLoader::stop_worker() {
  if (worker_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    // The worker waits only on not_full_; the batch it may be building finishes first (well
    // under a millisecond) and is then dropped.
    not_full_.notify_all();
    worker_.join();
  }
  queue_.clear();
  error_ = nullptr;
  stop_ = false;
}

void BatchLoader::start_epoch(int64_t epoch) {
  stop_worker();
  epoch_ = epoch;
  order_ = epoch_order(dataset_.count, options_.seed, epoch, options_.shuffle);
  consumed_ = 0;
  started_ = true;
  // The worker starts only after order_ and epoch_ are written; thread creation orders those
  // writes before everything the worker reads.
  if (options_.prefetch > 0) worker_ = std::thread(&BatchLoader::worker_loop, this, batches_per_epoch());
}

void BatchLoader::worker_loop(int64_t num_batches) {
  const size_t capacity = static_cast<size_t>(options_.prefetch);
  try {
    for (int64_t b = 0; b < num_batches; ++b) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        not_full_.wait(lock, [&] { return stop_ || queue_.size() < capacity; });
        if (stop_) return;
      }
      // Built outside the lock so that the consumer can take earlier batches meanwhile.
      Batch batch = build(b);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stop_) return;
        queue_.push_back(std::move(batch));
      }
      not_empty_.notify_one();
    }
  } catch (...) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      error_ = std::current_exception();
    }
    not_empty_.notify_one();
  }
}

bool BatchLoader::next(Batch& out) {
  if (!started_) throw Error("batch loader: next() called before start_epoch(); start an epoch first");
  if (options_.prefetch == 0) {
    if (error_) std::rethrow_exception(error_);
    if (consumed_ >= batches_per_epoch()) return false;
    try {
      out = build(consumed_);
    } catch (...) {
      // Sticky, as with the worker: the epoch cannot continue past a batch that failed.
      error_ = std::current_exception();
      throw;
    }
    ++consumed_;
    return true;
  }
  if (consumed_ >= batches_per_epoch()) return false;
  std::unique_lock<std::mutex> lock(mutex_);
  not_empty_.wait(lock, [&] { return !queue_.empty() || error_ != nullptr; });
  if (queue_.empty()) std::rethrow_exception(error_);
  out = std::move(queue_.front());
  queue_.pop_front();
  lock.unlock();
  not_full_.notify_one();
  ++consumed_;
  return true;
}

Batch BatchLoader::build(int64_t batch_index) const {
  const Dataset& ds = dataset_;
  const int64_t R = ds.rows, C = ds.cols, pixels = R * C;
  const int64_t begin = batch_index * options_.batch_size;
  const int64_t n = std::min(options_.batch_size, ds.count - begin);
  const Augment& aug = options_.augment;
  const bool augment = options_.train && (aug.pad_crop > 0 || aug.hflip);
  const int64_t P = aug.pad_crop;
  const float black = lut_[0];

  Batch batch;
  batch.index = batch_index;
  batch.epoch = epoch_;
  batch.images = Tensor(DType::kF32, {n, 1, R, C});
  batch.labels = Tensor(DType::kI64, {n});
  batch.samples.resize(static_cast<size_t>(n));
  float* images = batch.images.data<float>();
  int64_t* labels = batch.labels.data<int64_t>();

  for (int64_t i = 0; i < n; ++i) {
    const int64_t position = begin + i;
    const int64_t sample = order_[static_cast<size_t>(position)];
    batch.samples[static_cast<size_t>(i)] = sample;
    labels[i] = ds.labels[static_cast<size_t>(sample)];
    const uint8_t* src = ds.images.data() + sample * pixels;
    float* dst = images + i * pixels;
    if (!augment) {
      for (int64_t k = 0; k < pixels; ++k) dst[k] = lut_[src[k]];
      continue;
    }
    const AugmentDraw d = draw_augment(options_.seed, epoch_, position, aug);
    // Output (y, x) reads source (y + dy, x + dx); columns [x0, x1) are the ones that land
    // inside the source image, the rest (and whole rows outside it) are padding.
    const int64_t dy = d.crop_y - P, dx = d.crop_x - P;
    const int64_t x0 = std::clamp<int64_t>(-dx, 0, C), x1 = std::clamp<int64_t>(C - dx, x0, C);
    for (int64_t y = 0; y < R; ++y) {
      float* row = dst + y * C;
      const int64_t sy = y + dy;
      if (sy < 0 || sy >= R) {
        std::fill(row, row + C, black);
        continue;
      }
      const uint8_t* srow = src + sy * C;
      if (!d.flip) {
        std::fill(row, row + x0, black);
        for (int64_t x = x0; x < x1; ++x) row[x] = lut_[srow[x + dx]];
        std::fill(row + x1, row + C, black);
      } else {
        // Flipped: output column x holds what the unflipped crop has at C - 1 - x.
        std::fill(row + (C - x0), row + C, black);
        for (int64_t x = x0; x < x1; ++x) row[C - 1 - x] = lut_[srow[x + dx]];
        std::fill(row, row + (C - x1), black);
      }
    }
  }
  if (options_.post_process) options_.post_process(batch);
  return batch;
}

}  // namespace xnn::data
