// Training batches from a Dataset: per-epoch shuffling, random crop / horizontal flip, and
// normalisation, prepared ahead of the consumer on a background thread.
//
// Reproducibility. What a loader yields (order, augmentation choices, pixel values) is a pure
// function of (seed, epoch, dataset, options); thread timing and prefetch depth never change it.
// All randomness comes from SplitMix64 (Steele, Lea & Flood 2014: state += 0x9e3779b97f4a7c15,
// output = the splitmix64 finaliser of the state), with range reduction written here (Lemire's
// multiply-shift with rejection) rather than std::uniform_int_distribution, whose algorithm
// differs between standard libraries. Two independent streams are derived by hashing:
//   shuffle:  one stream per (seed, epoch), a Fisher-Yates shuffle from the last position down;
//   augment:  one stream per (seed, epoch, position in the epoch), three draws in this order:
//             crop_y = below(2P+1), crop_x = below(2P+1), flip = top bit of the third draw.
// Keying augmentation by position (not by which batch the worker happens to be building, nor by
// a shared running generator) is what makes the result independent of prefetching.
//
// Pixel pipeline for one sample (P = augment.pad_crop, R x C the dataset's image size):
//   1. normalise every pixel: x = (pixel * scale - mean) / std (as Preprocess defines it);
//   2. random crop: conceptually pad by P pixels on every side with the normalised value of a
//      black (0) pixel, so the padding looks like the image background, then keep the R x C
//      window starting at (crop_y, crop_x), each in [0, 2P]: out(y, x) = in(y + crop_y - P,
//      x + crop_x - P), or the black value where that falls outside the image;
//   3. horizontal flip of the cropped image when `flip`.
// The padding uses the normalised black value rather than 0.0f because after normalisation 0.0f
// is the dataset mean (a mid grey), which would draw a visible frame around shifted images.
// Output is always NCHW [N, 1, R, C]; Preprocess::layout is not consulted.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/core/tensor.h"
#include "harness/data/fashion_mnist.h"

namespace xnn::data {

struct Augment {
  int pad_crop = 0;    // random crop: pad by this many black pixels, crop back at an offset in [0, 2P]
  bool hflip = false;  // mirror left-right with probability 0.5
};

struct Batch {
  Tensor images;                 // f32 [N, 1, R, C] (NCHW)
  Tensor labels;                 // i64 [N]
  int64_t index = 0;             // batch index within the epoch
  int64_t epoch = 0;
  std::vector<int64_t> samples;  // dataset index of each row (for logging per-sample results)
};

struct LoaderOptions {
  int64_t batch_size = 64;
  bool shuffle = true;
  bool drop_last = false;  // the last partial batch is kept unless drop_last
  uint64_t seed = 0;
  bool train = true;       // augmentation applies only to a training loader; evaluation sets false
  Augment augment;
  Preprocess preprocess;   // scale, mean, std (one value each: the images are grey)
  int prefetch = 2;        // batches prepared ahead on a background thread (0: synchronous, no thread)
  // Optional extra work on each finished batch, run where the batch is built (the worker thread
  // when prefetch > 0), so that it overlaps with training too. It must be deterministic for the
  // reproducibility guarantee to hold; an exception it throws reaches the consumer's next().
  std::function<void(Batch&)> post_process;
};

// The augmentation choices for the sample at `position` of `epoch` (see the stream layout
// above). Exposed so that tools and tests can reproduce exactly what the loader did.
struct AugmentDraw {
  int64_t crop_y = 0, crop_x = 0;  // window offset into the padded image, each in [0, 2 * pad_crop]
  bool flip = false;
};
AugmentDraw draw_augment(uint64_t seed, int64_t epoch, int64_t position, const Augment& augment);

// The order in which one epoch visits the dataset: a permutation of [0, count), the identity
// without shuffle.
std::vector<int64_t> epoch_order(int64_t count, uint64_t seed, int64_t epoch, bool shuffle);

// One consumer thread drives a loader: start_epoch, then next() until it returns false. The
// dataset must outlive the loader and stay unchanged while it is in use.
class BatchLoader {
 public:
  // Throws xnn::Error naming the option for batch_size <= 0, pad_crop < 0, prefetch < 0, an
  // empty or inconsistent dataset, labels >= num_classes, bad mean/std, or drop_last leaving
  // no batch at all.
  BatchLoader(const Dataset& dataset, LoaderOptions options);
  // Stops the worker and joins it, also mid-epoch; batches still queued are discarded.
  ~BatchLoader();
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  int64_t batches_per_epoch() const;
  const LoaderOptions& options() const { return options_; }

  // Abandons the current epoch if one is running (discarding its prepared batches), computes the
  // order for `epoch` and starts preparing its batches.
  void start_epoch(int64_t epoch);
  // The next batch of the epoch; false once the epoch is exhausted. An exception raised while
  // preparing a batch is rethrown here, after the batches prepared before it, and again on every
  // later call until start_epoch. Throws if no epoch was started.
  bool next(Batch& out);

 private:
  Batch build(int64_t batch_index) const;
  void worker_loop(int64_t num_batches);
  void stop_worker();

  const Dataset& dataset_;
  const LoaderOptions options_;
  float lut_[256];  // normalised value of each pixel value; lut_[0] also fills the crop padding

  // Set by start_epoch while no worker runs; read-only for the worker.
  int64_t epoch_ = 0;
  bool started_ = false;
  std::vector<int64_t> order_;
  int64_t consumed_ = 0;  // consumer-side only

  // The worker hand-off: a queue of at most `prefetch` batches.
  std::thread worker_;
  std::mutex mutex_;
  std::condition_variable not_full_;   // worker waits for room (or stop)
  std::condition_variable not_empty_;  // consumer waits for a batch (or an error)
  std::deque<Batch> queue_;
  std::exception_ptr error_;
  bool stop_ = false;
};

}  // namespace xnn::data
