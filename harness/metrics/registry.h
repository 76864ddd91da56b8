// xnn-lab's own small Prometheus client: Registry, Family, Counter, Gauge, Histogram.
//
// prometheus-cpp is not packaged in Debian 12, so this module mirrors its API shape instead:
//
//   auto registry = std::make_shared<xnn::metrics::Registry>();
//   auto& jobs = xnn::metrics::BuildCounter().Name("xnn_lab_jobs_total").Help("Jobs finished")
//                    .Register(*registry);
//   jobs.Add({{"outcome", "done"}}).Increment();
//   auto& size = xnn::metrics::BuildGauge().Name("xnn_lab_model_size_bytes").Help("...").Register(*registry);
//   size.Add({{"model", "cnn"}}).Set(96000);
//   auto& lat = xnn::metrics::BuildHistogram().Name("x_seconds").Help("...").Register(*registry);
//   lat.Add({}, xnn::metrics::Histogram::BucketBoundaries{0.1, 1}).Observe(0.3);
//   std::string text = xnn::metrics::TextSerializer().Serialize(registry->Collect());
//
// Swapping prometheus-cpp in is a one-file change for the code that uses metrics: store_metrics,
// the exporters, the CLI and the tests use only names and signatures prometheus-cpp has
// (Registry, Family, Counter, Gauge, Histogram, Build*, Collectable, MetricFamily, ClientMetric,
// MetricType, TextSerializer), so this header becomes prometheus-cpp's includes plus
// `namespace xnn { namespace metrics = ::prometheus; }` (text_serializer.h then only includes
// it) and harness/metrics/CMakeLists.txt links prometheus-cpp::core instead of compiling
// registry.cpp and text_serializer.cpp.
//
// Output is the Prometheus text exposition format 0.0.4 (text_serializer.h). Conventions this
// module enforces (invalid_argument at registration): valid metric and label names, counters
// named `..._total`, no label named `le` (reserved for histogram buckets) or starting with `__`.
// Labels must be bounded: a model, variant, target or metric name, never a run id or a commit.
//
// Thread-safe: counters and gauges are atomics; each histogram and each family has its own
// mutex; the registry has a mutex. References returned by Register/Add stay valid for the
// lifetime of the registry (until Family::Remove for a metric).
#pragma once
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace xnn::metrics {

using Labels = std::map<std::string, std::string>;

enum class MetricType { Counter, Gauge, Histogram, Untyped };

// One sample set of a family at collection time (prometheus-cpp's ClientMetric).
struct ClientMetric {
  struct Label {
    std::string name;
    std::string value;
    bool operator==(const Label&) const = default;
  };
  std::vector<Label> label;  // sorted by name

  struct Counter {
    double value = 0.0;
  } counter;
  struct Gauge {
    double value = 0.0;
  } gauge;
  struct Bucket {
    std::uint64_t cumulative_count = 0;
    double upper_bound = 0.0;  // the last bucket is +Inf
  };
  struct Histogram {
    std::uint64_t sample_count = 0;
    double sample_sum = 0.0;
    std::vector<Bucket> bucket;  // cumulative, ascending, ending with +Inf
  } histogram;
  struct Untyped {
    double value = 0.0;
  } untyped;
};

// A collected family: name, help, type and one ClientMetric per label set.
struct MetricFamily {
  std::string name;
  std::string help;
  MetricType type = MetricType::Untyped;
  std::vector<ClientMetric> metric;
};

// Anything that produces families at scrape time (a Registry, or a collector that reads the
// results store on every scrape). Collect() may be called from several threads at once.
class Collectable {
 public:
  virtual ~Collectable() = default;
  virtual std::vector<MetricFamily> Collect() const = 0;
};

// A monotonically increasing value. Names end in `_total`.
class Counter {
 public:
  static constexpr MetricType metric_type = MetricType::Counter;
  Counter() = default;
  void Increment() { Increment(1.0); }
  // Negative increments are ignored (a counter never goes down).
  void Increment(double value);
  double Value() const { return value_.load(std::memory_order_relaxed); }
  ClientMetric Collect() const;

 private:
  std::atomic<double> value_{0.0};
};

// A value that goes up and down.
class Gauge {
 public:
  static constexpr MetricType metric_type = MetricType::Gauge;
  Gauge() = default;
  explicit Gauge(double value) : value_(value) {}
  void Increment() { Increment(1.0); }
  void Increment(double value) { value_.fetch_add(value, std::memory_order_relaxed); }
  void Decrement() { Increment(-1.0); }
  void Decrement(double value) { Increment(-value); }
  void Set(double value) { value_.store(value, std::memory_order_relaxed); }
  // Seconds since the Unix epoch (for `_timestamp_seconds` gauges).
  void SetToCurrentTime();
  double Value() const { return value_.load(std::memory_order_relaxed); }
  ClientMetric Collect() const;

 private:
  std::atomic<double> value_{0.0};
};

// Counts observations into buckets with inclusive upper bounds (`le`); +Inf is implicit.
class Histogram {
 public:
  static constexpr MetricType metric_type = MetricType::Histogram;
  using BucketBoundaries = std::vector<double>;
  // Boundaries must be strictly increasing and finite (invalid_argument otherwise).
  explicit Histogram(const BucketBoundaries& buckets);
  void Observe(double value);
  // Adds pre-bucketed observations: one count per boundary plus the last for +Inf.
  void ObserveMultiple(const std::vector<double>& bucket_increments, double sum_of_values);
  ClientMetric Collect() const;

 private:
  BucketBoundaries bounds_;
  mutable std::mutex mutex_;
  std::vector<std::uint64_t> counts_;  // per bucket (not cumulative), bounds_.size() + 1
  double sum_ = 0.0;
};

// Helpers shared by families and serializers.
bool IsValidMetricName(const std::string& name);
bool IsValidLabelName(const std::string& name);

// All metrics of one name: one per label set. Add() with a label set that exists returns the
// existing metric (its constructor arguments are then ignored).
template <typename T>
class Family : public Collectable {
 public:
  Family(const std::string& name, const std::string& help, const Labels& constant_labels);

  template <typename... Args>
  T& Add(const Labels& labels, Args&&... args) {
    CheckLabels(labels);
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = metrics_.find(labels);
    if (it == metrics_.end()) it = metrics_.emplace(labels, std::make_unique<T>(std::forward<Args>(args)...)).first;
    return *it->second;
  }
  // Removes a metric obtained from Add (references to it become invalid); unknown: no-op.
  void Remove(T* metric);
  bool Has(const Labels& labels) const;

  const std::string& GetName() const { return name_; }
  const std::string& GetHelp() const { return help_; }
  const Labels& GetConstantLabels() const { return constant_labels_; }
  std::vector<MetricFamily> Collect() const override;

 private:
  void CheckLabels(const Labels& labels) const;
  std::string name_;
  std::string help_;
  Labels constant_labels_;
  mutable std::mutex mutex_;
  std::map<Labels, std::unique_ptr<T>> metrics_;
};

// Owns families; collects them in registration order.
class Registry : public Collectable {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Registering a name again with the same type, help and constant labels returns the existing
  // family; any other clash throws invalid_argument.
  template <typename T>
  Family<T>& Add(const std::string& name, const std::string& help, const Labels& labels);
  std::vector<MetricFamily> Collect() const override;

 private:
  struct Entry {
    MetricType type;
    std::string name;
    std::unique_ptr<Collectable> family;  // a Family<T>
  };
  mutable std::mutex mutex_;
  std::vector<Entry> families_;
};

namespace detail {
template <typename T>
class Builder {
 public:
  Builder& Name(const std::string& name) {
    name_ = name;
    return *this;
  }
  Builder& Help(const std::string& help) {
    help_ = help;
    return *this;
  }
  Builder& Labels(const metrics::Labels& labels) {
    labels_ = labels;
    return *this;
  }
  Family<T>& Register(Registry& registry) { return registry.Add<T>(name_, help_, labels_); }

 private:
  std::string name_;
  std::string help_;
  metrics::Labels labels_;
};
}  // namespace detail

inline detail::Builder<Counter> BuildCounter() { return {}; }
inline detail::Builder<Gauge> BuildGauge() { return {}; }
inline detail::Builder<Histogram> BuildHistogram() { return {}; }

extern template class Family<Counter>;
extern template class Family<Gauge>;
extern template class Family<Histogram>;
extern template Family<Counter>& Registry::Add<Counter>(const std::string&, const std::string&, const Labels&);
extern template Family<Gauge>& Registry::Add<Gauge>(const std::string&, const std::string&, const Labels&);
extern template Family<Histogram>& Registry::Add<Histogram>(const std::string&, const std::string&, const Labels&);

}  // namespace xnn::metrics
