#include "harness/metrics/registry.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace xnn::metrics {

namespace {

bool is_name_start(char c, bool colon_ok) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon_ok && c == ':');
}
bool is_name_char(char c, bool colon_ok) { return is_name_start(c, colon_ok) || (c >= '0' && c <= '9'); }

bool valid_name(const std::string& name, bool colon_ok) {
  if (name.empty() || !is_name_start(name[0], colon_ok)) return false;
  return std::all_of(name.begin(), name.end(), [&](char c) { return is_name_char(c, colon_ok); });
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<ClientMetric::Label> to_label_list(const Labels& constant, const Labels& labels) {
  Labels all = constant;
  for (const auto& [k, v] : labels) all[k] = v;
  std::vector<ClientMetric::Label> out;
  out.reserve(all.size());
  for (const auto& [k, v] : all) out.push_back({k, v});
  return out;
}

void check_label_names(const std::string& metric, const Labels& labels) {
  for (const auto& [name, value] : labels) {
    if (!IsValidLabelName(name)) {
      throw std::invalid_argument(metric + ": invalid label name '" + name +
                                  "' (expected [a-zA-Z_][a-zA-Z0-9_]*, not starting with __)");
    }
    if (name == "le" || name == "quantile") {
      throw std::invalid_argument(metric + ": label name '" + name + "' is reserved (histogram buckets / summary quantiles)");
    }
  }
}

}  // namespace

bool IsValidMetricName(const std::string& name) { return valid_name(name, true); }

bool IsValidLabelName(const std::string& name) {
  return valid_name(name, false) && name.rfind("__", 0) != 0;
}

// ---- Counter ----------------------------------------------------------------------------

void Counter::Increment(double value) {
  if (!(value >= 0.0)) return;  // negative or NaN: a counter never goes down
  value_.fetch_add(value, std::memory_order_relaxed);
}

ClientMetric Counter::Collect() const {
  ClientMetric m;
  m.counter.value = Value();
  return m;
}

// ---- Gauge ------------------------------------------------------------------------------

void Gauge::SetToCurrentTime() {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  Set(std::chrono::duration<double>(now).count());
}

ClientMetric Gauge::Collect() const {
  ClientMetric m;
  m.gauge.value = Value();
  return m;
}

// ---- Histogram --------------------------------------------------------------------------

Histogram::Histogram(const BucketBoundaries& buckets) : bounds_(buckets), counts_(buckets.size() + 1, 0) {
  for (size_t i = 0; i < bounds_.size(); ++i) {
    if (!std::isfinite(bounds_[i])) throw std::invalid_argument("histogram bucket boundaries must be finite (+Inf is implicit)");
    if (i > 0 && !(bounds_[i] > bounds_[i - 1]))
      throw std::invalid_argument("histogram bucket boundaries must be strictly increasing");
  }
}

void Histogram::Observe(double value) {
  // Buckets are inclusive upper bounds: the first bound >= value; NaN lands in +Inf.
  const size_t index =
      std::isnan(value) ? bounds_.size()
                        : static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin());
  std::lock_guard<std::mutex> lock(mutex_);
  ++counts_[index];
  sum_ += value;
}

void Histogram::ObserveMultiple(const std::vector<double>& bucket_increments, double sum_of_values) {
  if (bucket_increments.size() != counts_.size())
    throw std::length_error("ObserveMultiple: expected one increment per bucket plus one for +Inf");
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < counts_.size(); ++i) {
    if (bucket_increments[i] > 0) counts_[i] += static_cast<std::uint64_t>(bucket_increments[i]);
  }
  sum_ += sum_of_values;
}

ClientMetric Histogram::Collect() const {
  ClientMetric m;
  std::lock_guard<std::mutex> lock(mutex_);  // one consistent snapshot: +Inf bucket == count
  std::uint64_t cumulative = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    cumulative += counts_[i];
    const double bound = i < bounds_.size() ? bounds_[i] : std::numeric_limits<double>::infinity();
    m.histogram.bucket.push_back({cumulative, bound});
  }
  m.histogram.sample_count = cumulative;
  m.histogram.sample_sum = sum_;
  return m;
}

// ---- Family -----------------------------------------------------------------------------

template <typename T>
Family<T>::Family(const std::string& name, const std::string& help, const Labels& constant_labels)
    : name_(name), help_(help), constant_labels_(constant_labels) {
  if (!IsValidMetricName(name)) {
    throw std::invalid_argument("invalid metric name '" + name + "' (expected [a-zA-Z_:][a-zA-Z0-9_:]*)");
  }
  if (T::metric_type == MetricType::Counter && !ends_with(name, "_total")) {
    throw std::invalid_argument("counter '" + name + "' must be named ..._total");
  }
  if (T::metric_type != MetricType::Counter && ends_with(name, "_total")) {
    throw std::invalid_argument("'" + name + "' is not a counter: only counters are named ..._total");
  }
  check_label_names(name, constant_labels);
}

template <typename T>
void Family<T>::CheckLabels(const Labels& labels) const {
  check_label_names(name_, labels);
  for (const auto& [k, v] : labels) {
    if (constant_labels_.count(k)) throw std::invalid_argument(name_ + ": label '" + k + "' is already a constant label");
  }
}

template <typename T>
void Family<T>::Remove(T* metric) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = metrics_.begin(); it != metrics_.end(); ++it) {
    if (it->second.get() == metric) {
      metrics_.erase(it);
      return;
    }
  }
}

template <typename T>
bool Family<T>::Has(const Labels& labels) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return metrics_.count(labels) != 0;
}

template <typename T>
std::vector<MetricFamily> Family<T>::Collect() const {
  MetricFamily f;
  f.name = name_;
  f.help = help_;
  f.type = T::metric_type;
  std::lock_guard<std::mutex> lock(mutex_);
  f.metric.reserve(metrics_.size());
  for (const auto& [labels, metric] : metrics_) {
    ClientMetric m = metric->Collect();
    m.label = to_label_list(constant_labels_, labels);
    f.metric.push_back(std::move(m));
  }
  return {std::move(f)};
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

// ---- Registry ---------------------------------------------------------------------------

template <typename T>
Family<T>& Registry::Add(const std::string& name, const std::string& help, const Labels& labels) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (Entry& e : families_) {
    if (e.name != name) continue;
    auto* existing = dynamic_cast<Family<T>*>(e.family.get());
    if (!existing) throw std::invalid_argument("metric '" + name + "' is already registered with another type");
    if (existing->GetHelp() != help || existing->GetConstantLabels() != labels)
      throw std::invalid_argument("metric '" + name + "' is already registered with another help text or labels");
    return *existing;
  }
  auto family = std::make_unique<Family<T>>(name, help, labels);
  Family<T>& ref = *family;
  families_.push_back(Entry{T::metric_type, name, std::move(family)});
  return ref;
}

template Family<Counter>& Registry::Add<Counter>(const std::string&, const std::string&, const Labels&);
template Family<Gauge>& Registry::Add<Gauge>(const std::string&, const std::string&, const Labels&);
template Family<Histogram>& Registry::Add<Histogram>(const std::string&, const std::string&, const Labels&);

std::vector<MetricFamily> Registry::Collect() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<MetricFamily> out;
  out.reserve(families_.size());
  for (const Entry& e : families_) {
    for (MetricFamily& f : e.family->Collect()) out.push_back(std::move(f));
  }
  return out;
}

}  // namespace xnn::metrics
