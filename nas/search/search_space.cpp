#include "nas/search/search_space.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "engine/core/error.h"
#include "harness/util/json.h"

namespace xnn::nas {

namespace {

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::string number_text(double v) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  // Shortest text that reads back to the same double (0.75, not 0.75000000000000000).
  for (int prec = 1; prec <= 17; ++prec) {
    char shorter[40];
    std::snprintf(shorter, sizeof(shorter), "%.*g", prec, v);
    if (std::strtod(shorter, nullptr) == v) return shorter;
  }
  return buf;
}

bool same_value(const ParamValue& a, const ParamValue& b) {
  if (a.index() != b.index()) {
    // 3 and 3.0 name the same numeric choice.
    if (std::holds_alternative<std::string>(a) || std::holds_alternative<std::string>(b)) return false;
    return param_value_number(a) == param_value_number(b);
  }
  return a == b;
}

int64_t round_to_step(double v, int64_t low, int64_t high, int64_t step) {
  double k = std::round((v - static_cast<double>(low)) / static_cast<double>(step));
  int64_t r = low + static_cast<int64_t>(k) * step;
  int64_t top = low + (high - low) / step * step;
  return std::clamp(r, low, top);
}

}  // namespace

std::string param_value_text(const ParamValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) return number_text(*d);
  return std::get<std::string>(v);
}

double param_value_number(const ParamValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&v)) return *d;
  throw Error("parameter value '" + std::get<std::string>(v) + "' is a string, expected a number");
}

std::mt19937_64 derive_rng(uint64_t seed, uint64_t index, uint64_t salt) {
  uint64_t x = seed;
  uint64_t a = splitmix64(x);
  x ^= index * 0xD1B54A32D192ED03ull;
  uint64_t b = splitmix64(x);
  x ^= salt * 0x8CB92BA72F3D8DD7ull;
  uint64_t c = splitmix64(x);
  std::seed_seq seq{static_cast<uint32_t>(a), static_cast<uint32_t>(a >> 32), static_cast<uint32_t>(b),
                    static_cast<uint32_t>(b >> 32), static_cast<uint32_t>(c), static_cast<uint32_t>(c >> 32)};
  return std::mt19937_64(seq);
}

// ---------------------------------------------------------------- building

void SearchSpace::check_new_name(const std::string& name) const {
  XNN_CHECK(!name.empty(), "search space: a parameter name is empty");
  for (const Param& p : params_) XNN_CHECK(p.name != name, "search space: parameter '" + name + "' is defined twice");
}

SearchSpace& SearchSpace::add_float(const std::string& name, double low, double high, bool log) {
  check_new_name(name);
  XNN_CHECK(std::isfinite(low) && std::isfinite(high) && low <= high,
            "search space: parameter '" + name + "': expected finite low <= high, got [" + number_text(low) + ", " +
                number_text(high) + "]");
  XNN_CHECK(!log || low > 0, "search space: parameter '" + name + "': a log range needs low > 0, got " +
                                 number_text(low));
  params_.push_back({name, FloatDistribution{low, high, log}});
  return *this;
}

SearchSpace& SearchSpace::add_int(const std::string& name, int64_t low, int64_t high, int64_t step, bool log) {
  check_new_name(name);
  XNN_CHECK(low <= high, "search space: parameter '" + name + "': expected low <= high, got [" +
                             std::to_string(low) + ", " + std::to_string(high) + "]");
  XNN_CHECK(step >= 1, "search space: parameter '" + name + "': step must be >= 1, got " + std::to_string(step));
  XNN_CHECK(!log || (low >= 1 && step == 1),
            "search space: parameter '" + name + "': a log int range needs low >= 1 and step 1");
  params_.push_back({name, IntDistribution{low, high, step, log}});
  return *this;
}

SearchSpace& SearchSpace::add_categorical(const std::string& name, std::vector<ParamValue> choices) {
  check_new_name(name);
  XNN_CHECK(!choices.empty(), "search space: parameter '" + name + "': expected at least one choice");
  for (size_t i = 0; i < choices.size(); ++i) {
    if (const auto* d = std::get_if<double>(&choices[i]))
      XNN_CHECK(std::isfinite(*d), "search space: parameter '" + name + "': choice " + std::to_string(i) +
                                       " is not a finite number");
    for (size_t j = 0; j < i; ++j) {
      XNN_CHECK(!same_value(choices[i], choices[j]), "search space: parameter '" + name + "': choice '" +
                                                         param_value_text(choices[i]) + "' appears twice");
    }
  }
  params_.push_back({name, CategoricalDistribution{std::move(choices)}});
  return *this;
}

size_t SearchSpace::index_of(const std::string& name) const {
  for (size_t i = 0; i < params_.size(); ++i) {
    if (params_[i].name == name) return i;
  }
  throw Error("search space: no parameter named '" + name + "'");
}

// ---------------------------------------------------------------- sampling

double SearchSpace::sample_internal(size_t index, std::mt19937_64& rng) const {
  const Distribution& d = params_.at(index).distribution;
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  if (const auto* f = std::get_if<FloatDistribution>(&d)) {
    if (f->low == f->high) return f->low;
    if (f->log) return std::clamp(std::exp(std::log(f->low) + u01(rng) * (std::log(f->high) - std::log(f->low))),
                                  f->low, f->high);
    return std::clamp(f->low + u01(rng) * (f->high - f->low), f->low, f->high);
  }
  if (const auto* i = std::get_if<IntDistribution>(&d)) {
    if (i->log) {
      // Log-uniform over [low - 0.5, high + 0.5], rounded: each integer's mass follows the log scale.
      double lo = std::log(static_cast<double>(i->low) - 0.5), hi = std::log(static_cast<double>(i->high) + 0.5);
      return static_cast<double>(round_to_step(std::exp(lo + u01(rng) * (hi - lo)), i->low, i->high, 1));
    }
    int64_t n = (i->high - i->low) / i->step;
    return static_cast<double>(i->low + std::uniform_int_distribution<int64_t>(0, n)(rng) * i->step);
  }
  const auto& c = std::get<CategoricalDistribution>(d);
  return static_cast<double>(std::uniform_int_distribution<size_t>(0, c.choices.size() - 1)(rng));
}

TrialParams SearchSpace::sample(std::mt19937_64& rng) const {
  std::vector<double> internal(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) internal[i] = sample_internal(i, rng);
  return decode(internal);
}

// ---------------------------------------------------------------- encoding

double SearchSpace::to_internal(size_t index, const ParamValue& value) const {
  const Param& p = params_.at(index);
  auto bad = [&](const std::string& what) {
    return Error("parameter '" + p.name + "': value '" + param_value_text(value) + "' " + what);
  };
  if (const auto* f = std::get_if<FloatDistribution>(&p.distribution)) {
    if (std::holds_alternative<std::string>(value)) throw bad("is not a number");
    double v = param_value_number(value);
    if (!(v >= f->low && v <= f->high))
      throw bad("is outside [" + number_text(f->low) + ", " + number_text(f->high) + "]");
    return v;
  }
  if (const auto* i = std::get_if<IntDistribution>(&p.distribution)) {
    if (std::holds_alternative<std::string>(value)) throw bad("is not a number");
    double v = param_value_number(value);
    if (v != std::floor(v)) throw bad("is not an integer");
    auto n = static_cast<int64_t>(v);
    if (n < i->low || n > i->high)
      throw bad("is outside [" + std::to_string(i->low) + ", " + std::to_string(i->high) + "]");
    if ((n - i->low) % i->step != 0) throw bad("is not on the step " + std::to_string(i->step));
    return v;
  }
  const auto& c = std::get<CategoricalDistribution>(p.distribution);
  for (size_t k = 0; k < c.choices.size(); ++k) {
    if (same_value(c.choices[k], value)) return static_cast<double>(k);
  }
  throw bad("is not one of the choices");
}

ParamValue SearchSpace::from_internal(size_t index, double internal) const {
  const Param& p = params_.at(index);
  XNN_CHECK(std::isfinite(internal), "parameter '" + p.name + "': internal value is not finite");
  if (const auto* f = std::get_if<FloatDistribution>(&p.distribution)) return std::clamp(internal, f->low, f->high);
  if (const auto* i = std::get_if<IntDistribution>(&p.distribution))
    return round_to_step(internal, i->low, i->high, i->step);
  const auto& c = std::get<CategoricalDistribution>(p.distribution);
  auto k = static_cast<int64_t>(std::llround(internal));
  return c.choices[static_cast<size_t>(std::clamp<int64_t>(k, 0, static_cast<int64_t>(c.choices.size()) - 1))];
}

std::vector<double> SearchSpace::encode(const TrialParams& params) const {
  std::string why;
  XNN_CHECK(contains(params, &why), "search space: " + why);
  std::vector<double> out(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) out[i] = to_internal(i, params.at(params_[i].name));
  return out;
}

TrialParams SearchSpace::decode(const std::vector<double>& internal) const {
  XNN_CHECK(internal.size() == params_.size(), "search space: expected " + std::to_string(params_.size()) +
                                                   " internal values, got " + std::to_string(internal.size()));
  TrialParams out;
  for (size_t i = 0; i < params_.size(); ++i) out[params_[i].name] = from_internal(i, internal[i]);
  return out;
}

bool SearchSpace::contains(const TrialParams& params, std::string* why) const {
  auto fail = [&](const std::string& reason) {
    if (why) *why = reason;
    return false;
  };
  for (const auto& [name, value] : params) {
    bool known = std::any_of(params_.begin(), params_.end(), [&](const Param& p) { return p.name == name; });
    if (!known) return fail("unknown parameter '" + name + "'");
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    auto it = params.find(params_[i].name);
    if (it == params.end()) return fail("parameter '" + params_[i].name + "' is missing");
    try {
      to_internal(i, it->second);
    } catch (const Error& e) {
      return fail(e.what());
    }
  }
  return true;
}

std::string SearchSpace::to_json() const {
  json::Writer w;
  w.begin_object();
  for (const Param& p : params_) {
    w.key(p.name).begin_object();
    if (const auto* f = std::get_if<FloatDistribution>(&p.distribution)) {
      w.field("type", "float").key("low").raw(number_text(f->low)).key("high").raw(number_text(f->high));
      w.field("log", f->log);
    } else if (const auto* i = std::get_if<IntDistribution>(&p.distribution)) {
      w.field("type", "int").field("low", i->low).field("high", i->high).field("step", i->step).field("log", i->log);
    } else {
      w.field("type", "categorical").key("choices").begin_array();
      for (const ParamValue& c : std::get<CategoricalDistribution>(p.distribution).choices) {
        if (const auto* s = std::get_if<std::string>(&c)) w.value(*s);
        else w.raw(param_value_text(c));
      }
      w.end_array();
    }
    w.end_object();
  }
  w.end_object();
  return w.str();
}

}  // namespace xnn::nas
