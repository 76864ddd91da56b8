// A flat search space for black-box strategies: an ordered list of named parameters, each a
// float range (optionally log-uniform), an int range (step, optionally log-uniform) or a
// categorical choice among strings or numbers. A trial's parameters are a map name -> value.
//
// Every value also has an "internal" representation, a double, as in Optuna's storage model:
// a float or int is its own value, a categorical is the index of its choice. Strategies work
// on internal values; the study store keeps them (plus a readable text) so a stored trial is
// decoded back exactly.
//
// Conditional decisions (e.g. per-block choices of a stage whose depth is itself a decision)
// are flattened: every decision is a parameter, and the objective ignores the ones a smaller
// choice makes inactive.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <variant>
#include <vector>

namespace xnn::nas {

// One parameter value: an int, a float or a string (categorical choices may be any of them).
using ParamValue = std::variant<int64_t, double, std::string>;
using TrialParams = std::map<std::string, ParamValue>;

// Readable text of a value: 3, 0.75, relu (numbers with up to 17 significant digits).
std::string param_value_text(const ParamValue& v);
// A value as a number; an Error for a string.
double param_value_number(const ParamValue& v);

struct FloatDistribution {
  double low = 0, high = 1;
  bool log = false;  // log-uniform: low > 0
};
struct IntDistribution {
  int64_t low = 0, high = 1;
  int64_t step = 1;  // values are low, low + step, ... <= high; must be 1 when log
  bool log = false;
};
struct CategoricalDistribution {
  std::vector<ParamValue> choices;  // distinct, at least one
};
using Distribution = std::variant<FloatDistribution, IntDistribution, CategoricalDistribution>;

struct Param {
  std::string name;
  Distribution distribution;
};

class SearchSpace {
 public:
  // Builders; each validates the range/choices and the name (non-empty, unique) and throws
  // xnn::Error naming the parameter and what was expected.
  SearchSpace& add_float(const std::string& name, double low, double high, bool log = false);
  SearchSpace& add_int(const std::string& name, int64_t low, int64_t high, int64_t step = 1, bool log = false);
  SearchSpace& add_categorical(const std::string& name, std::vector<ParamValue> choices);

  const std::vector<Param>& params() const { return params_; }
  size_t size() const { return params_.size(); }
  bool empty() const { return params_.empty(); }
  // Index of the parameter called `name`; an Error when there is none.
  size_t index_of(const std::string& name) const;
  const Param& param(const std::string& name) const { return params_[index_of(name)]; }

  // Uniform draw (log-uniform where asked) of every parameter.
  TrialParams sample(std::mt19937_64& rng) const;
  // Uniform draw of one parameter, as an internal value.
  double sample_internal(size_t index, std::mt19937_64& rng) const;

  // Value <-> internal representation of parameter `index`. to_internal throws when the value
  // is not in the distribution (wrong type, out of range, off-step, unknown choice);
  // from_internal rounds ints to their step and categorical indices to the nearest choice.
  double to_internal(size_t index, const ParamValue& value) const;
  ParamValue from_internal(size_t index, double internal) const;
  // All parameters in space order; throws when a parameter is missing or unknown.
  std::vector<double> encode(const TrialParams& params) const;
  TrialParams decode(const std::vector<double>& internal) const;
  // True when `params` has exactly the space's parameters, each in its distribution; else
  // false with the reason in `*why`.
  bool contains(const TrialParams& params, std::string* why = nullptr) const;

  // Canonical JSON description ({"name": {"type": "float", "low": .., "high": .., "log": ..}, ...}
  // in order); the study store keeps it to refuse resuming a study with a different space.
  std::string to_json() const;

  // Parameters the objective cannot tell apart map to one canonical form (a NAS stage's block
  // choices past its sampled depth build nothing). Strategies that skip repeats compare
  // canonical forms, so mutating an inactive parameter does not spend a trial on an architecture
  // already scored. Unset: the identity. Must return parameters this space contains.
  using Canonicalizer = std::function<TrialParams(const TrialParams&)>;
  void set_canonicalizer(Canonicalizer f) { canonicalizer_ = std::move(f); }
  TrialParams canonical(const TrialParams& params) const { return canonicalizer_ ? canonicalizer_(params) : params; }
  // encode(canonical(params)): the key repeats are detected by.
  std::vector<double> canonical_key(const TrialParams& params) const { return encode(canonical(params)); }

 private:
  void check_new_name(const std::string& name) const;
  std::vector<Param> params_;
  Canonicalizer canonicalizer_;
};

// Seeds a generator from a study seed and a draw index (splitmix64 mixing), so that every ask
// is reproducible from the seed and the trial's position, independent of wall time.
std::mt19937_64 derive_rng(uint64_t seed, uint64_t index, uint64_t salt = 0);

}  // namespace xnn::nas
