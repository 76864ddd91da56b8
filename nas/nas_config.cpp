#include "nas/nas_config.h"

#include <algorithm>
#include <filesystem>

#include "engine/core/error.h"
#include "harness/config/experiment_config.h"
#include "harness/config/yaml_section.h"
#include "nas/search/aging_evolution.h"
#include "nas/search/nsga2.h"
#include "nas/search/random_search.h"
#include "nas/search/tpe.h"

namespace fs = std::filesystem;

namespace xnn::nas {
namespace {

using Section = config::YamlSection;
std::string where(const std::string& file, const YAML::Node& n) { return config::yaml_where(file, n); }

void check_one_of(const Section& s, const std::string& key, const std::string& value,
                  const std::vector<std::string>& allowed) {
  if (std::find(allowed.begin(), allowed.end(), value) != allowed.end()) return;
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  const std::string guess = config::did_you_mean(value, allowed);
  s.fail(key, "is '" + value + "'" + (guess.empty() ? "" : " (did you mean '" + guess + "'?)") + "; expected one of: " + list);
}

bool is_int_hyperparameter(const std::string& name) { return name == "epochs" || name == "batch_size"; }

// `lr: {low: 0.01, high: 0.2, log: true}`, `epochs: {low: 5, high: 15, step: 5}` or
// `batch_size: {choices: [64, 128]}`.
HyperParamSpec parse_hyperparameter(const std::string& name, const YAML::Node& node, const std::string& file) {
  const std::string prefix = "hyperparameters." + name;
  Section s(node, prefix, file, {"low", "high", "log", "step", "choices"});
  HyperParamSpec h;
  h.name = name;
  if (!node.IsMap()) throw Error(where(file, node) + ": '" + prefix + "' must be a mapping ({low, high[, log]} or {choices})");
  try {
    if (s.has("choices")) {
      if (s.has("low") || s.has("high")) s.fail("choices", "excludes 'low'/'high'");
      const YAML::Node c = s.get("choices");
      if (!c.IsSequence() || c.size() == 0) s.fail("choices", "must be a non-empty list of numbers");
      std::vector<ParamValue> choices;
      for (const YAML::Node& v : c) {
        try {
          if (is_int_hyperparameter(name)) choices.emplace_back(v.as<int64_t>());
          else choices.emplace_back(v.as<double>());
        } catch (const YAML::Exception&) {
          throw Error(where(file, v) + ": '" + prefix + ".choices' must hold " +
                      (is_int_hyperparameter(name) ? "integers" : "numbers"));
        }
      }
      h.distribution = CategoricalDistribution{choices};
      SearchSpace().add_categorical(name, choices);  // validates (distinct choices)
      return h;
    }
    if (!s.has("low") || !s.has("high")) s.fail("low", "and 'high' are required (or give 'choices')");
    bool log = false;
    s.read("log", log, "true or false");
    if (is_int_hyperparameter(name)) {
      IntDistribution d;
      s.read("low", d.low, "an integer");
      s.read("high", d.high, "an integer");
      s.read("step", d.step, "an integer >= 1");
      d.log = log;
      SearchSpace().add_int(name, d.low, d.high, d.step, d.log);
      h.distribution = d;
    } else {
      if (s.has("step")) s.fail("step", "applies to integer hyper-parameters only");
      FloatDistribution d;
      s.read("low", d.low, "a number");
      s.read("high", d.high, "a number");
      d.log = log;
      SearchSpace().add_float(name, d.low, d.high, d.log);
      h.distribution = d;
    }
  } catch (const Error& e) {
    const std::string msg = e.what();
    if (msg.rfind(file, 0) == 0) throw;
    throw Error(where(file, node) + ": '" + prefix + "': " + msg);
  }
  return h;
}

template <typename T>
std::vector<ParamValue> as_choices(const std::vector<T>& values) {
  std::vector<ParamValue> out;
  for (const T& v : values) {
    if constexpr (std::is_same_v<T, bool>) out.emplace_back(static_cast<int64_t>(v ? 1 : 0));
    else if constexpr (std::is_integral_v<T>) out.emplace_back(static_cast<int64_t>(v));
    else out.emplace_back(v);
  }
  return out;
}

template <typename T>
void add_decision(SearchSpace& out, const std::string& name, const std::vector<T>& values) {
  if (values.size() > 1) out.add_categorical(name, as_choices(values));
}

template <typename T>
T pick(const TrialParams& params, const std::string& name, const std::vector<T>& values) {
  const auto it = params.find(name);
  if (values.size() <= 1 || it == params.end()) {
    if (values.size() > 1) throw Error("nas: trial parameters lack '" + name + "'");
    return values.front();
  }
  if constexpr (std::is_same_v<T, bool>) {
    return param_value_number(it->second) != 0;
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(std::get<int64_t>(it->second));
  } else if constexpr (std::is_floating_point_v<T>) {
    return param_value_number(it->second);
  } else {
    return std::get<std::string>(it->second);
  }
}

std::string stage_key(size_t s) { return "s" + std::to_string(s); }
std::string block_key(size_t s, size_t b) { return stage_key(s) + ".b" + std::to_string(b); }

int64_t int_or(const YAML::Node& options, const std::string& key, int64_t fallback) {
  return options && options.IsMap() && options[key] ? options[key].as<int64_t>() : fallback;
}
double double_or(const YAML::Node& options, const std::string& key, double fallback) {
  return options && options.IsMap() && options[key] ? options[key].as<double>() : fallback;
}

}  // namespace

const std::vector<std::string>& tunable_hyperparameters() {
  static const std::vector<std::string> names{"lr", "weight_decay", "epochs", "batch_size"};
  return names;
}

const std::vector<std::string>& search_methods() {
  static const std::vector<std::string> methods{"blackbox", "oneshot", "darts"};
  return methods;
}

NasConfig parse_nas_config(const YAML::Node& root, const std::string& file) {
  NasConfig c;
  c.file = fs::absolute(file).lexically_normal().string();
  const fs::path base = fs::path(c.file).parent_path();
  if (!root.IsMap()) throw Error(file + ": a NAS config must be a YAML mapping");
  Section top(root, "", file,
              {"name", "method", "oneshot", "darts", "seed", "trials", "strategy", "pruner", "space",
               "hyperparameters", "train", "objectives", "constraints", "latency", "baselines", "output"});
  top.read("name", c.name, "a string");
  top.read("method", c.method, "blackbox, oneshot or darts");
  check_one_of(top, "method", c.method, search_methods());
  for (const std::string section : {"oneshot", "darts"}) {
    if (!top.has(section)) continue;
    if (section != c.method) top.fail(section, "is read only with 'method: " + section + "' (method is " + c.method + ")");
    if (!top.get(section).IsMap()) top.fail(section, "must be a mapping");
    c.method_options = top.get(section);
  }
  if (c.name.empty()) c.name = fs::path(file).stem().string();
  top.read("seed", c.seed, "a non-negative integer");
  top.read("trials", c.trials, "an integer >= 1");
  if (c.trials < 1) top.fail("trials", "must be >= 1");

  // strategy: a name or {type, ...options}
  if (top.has("strategy")) {
    const YAML::Node n = top.get("strategy");
    if (n.IsScalar()) {
      c.strategy = n.as<std::string>();
    } else {
      Section s(n, "strategy", file,
                {"type", "population_size", "sample_size", "sigma", "n_startup_trials", "n_ei_candidates",
                 "mutation_prob", "crossover_prob"});
      s.read("type", c.strategy, "random, evolution, tpe or nsga2");
      c.strategy_options = n;
    }
    check_one_of(top, "strategy", c.strategy, {"random", "evolution", "tpe", "nsga2"});
  }
  if (top.has("pruner")) {
    const YAML::Node n = top.get("pruner");
    if (n.IsScalar()) {
      c.pruner = n.as<std::string>();
    } else {
      Section s(n, "pruner", file,
                {"type", "n_startup_trials", "n_warmup_steps", "interval_steps", "min_resource", "reduction_factor"});
      s.read("type", c.pruner, "none, median or successive_halving");
      c.pruner_options = n;
    }
    check_one_of(top, "pruner", c.pruner, {"none", "median", "successive_halving"});
  }

  // space: {file: PATH} or the space mapping inline
  if (!top.has("space")) top.fail("space", "is required: {file: SPACE.yaml} or an inline MobileNet-like space");
  {
    const YAML::Node n = top.get("space");
    if (n.IsMap() && n["file"]) {
      Section s(n, "space", file, {"file"});
      std::string path;
      s.read("file", path, "a path");
      if (fs::path(path).is_relative()) path = (base / path).lexically_normal().string();
      if (!fs::exists(path)) s.fail("file", "names '" + path + "', which does not exist");
      c.space = arch::load_search_space(path);
    } else {
      c.space = arch::parse_search_space(n, file);
    }
  }

  if (top.has("hyperparameters")) {
    Section h(top.get("hyperparameters"), "hyperparameters", file, tunable_hyperparameters());
    for (const auto& kv : top.get("hyperparameters")) {
      c.hyperparameters.push_back(parse_hyperparameter(kv.first.as<std::string>(), kv.second, file));
    }
  }

  // train: a training config without model/name/output/checkpoint; parsed by the trainer's
  // own parser so both accept exactly the same recipe keys.
  {
    // Parsed in place (YAML::Clone drops the marks errors need); the keys added here are
    // removed again below, so the caller's tree is left as it was.
    YAML::Node train = top.has("train") ? top.get("train") : YAML::Node(YAML::NodeType::Map);
    if (!train.IsMap()) top.fail("train", "must be a mapping (a training config without model/output)");
    for (const char* key : {"model", "name", "output", "checkpoint"}) {
      if (train[key]) {
        throw Error(where(file, top.get("train")[key]) + ": 'train." + key +
                    "' is set by the search for every candidate; remove it");
      }
    }
    train["model"]["file"] = "nas-candidate.xnn";  // replaced by each candidate's model
    // The trainer's parser reads data.augment through data, and fails when `data` is absent.
    const bool added_data = !static_cast<const YAML::Node&>(train)["data"];
    if (added_data) train["data"] = YAML::Node(YAML::NodeType::Map);
    try {
      c.recipe = train::parse_train_config(train, file);
    } catch (...) {
      train.remove("model");
      if (added_data) train.remove("data");
      throw;
    }
    train.remove("model");
    if (added_data) train.remove("data");
    c.recipe.model_file.clear();
    c.recipe.name = c.name;
  }

  if (top.has("objectives")) {
    const YAML::Node n = top.get("objectives");
    c.objectives.clear();
    if (!n.IsSequence()) top.fail("objectives", "must be a list: [top1] or [top1, latency_ms]");
    for (const YAML::Node& o : n) c.objectives.push_back(o.as<std::string>());
    if (c.objectives != std::vector<std::string>{"top1"} &&
        c.objectives != std::vector<std::string>{"top1", "latency_ms"}) {
      top.fail("objectives", "must be [top1] (single objective, constraints apply) or [top1, latency_ms]");
    }
  }

  if (top.has("constraints")) {
    Section s(top.get("constraints"), "constraints", file, {"latency_ms", "params", "size_bytes"});
    for (const char* key : {"latency_ms", "params", "size_bytes"}) {
      if (!s.has(key)) continue;
      ConstraintSpec cs;
      cs.metric = key;
      s.read(key, cs.limit, "a positive number (the metric's upper bound)");
      if (!(cs.limit > 0)) s.fail(key, "must be > 0");
      c.constraints.push_back(cs);
    }
  }

  if (top.has("latency")) {
    Section s(top.get("latency"), "latency", file,
              {"target", "method", "predictor", "threads", "warmup", "runs", "min_time", "feedback", "confirm_rounds"});
    s.read("target", c.latency.target, "a target kind (e.g. cpu)");
    s.read("method", c.latency.method, "measured or predicted");
    check_one_of(s, "method", c.latency.method, {"measured", "predicted"});
    s.read("predictor", c.latency.predictor, "a predictor file (xnn-lab calibrate)");
    if (c.latency.method == "predicted") {
      if (c.latency.predictor.empty()) s.fail("method", "predicted needs 'latency.predictor' (a file from xnn-lab calibrate)");
      if (fs::path(c.latency.predictor).is_relative()) {
        c.latency.predictor = (base / c.latency.predictor).lexically_normal().string();
      }
      if (!fs::exists(c.latency.predictor)) s.fail("predictor", "names '" + c.latency.predictor + "', which does not exist");
    }
    s.read("threads", c.latency.threads, "an integer >= 1");
    if (c.latency.threads < 1) s.fail("threads", "must be >= 1");
    s.read("warmup", c.latency.warmup, "an integer >= 0");
    s.read("runs", c.latency.runs, "an integer >= 1");
    if (c.latency.runs < 1) s.fail("runs", "must be >= 1");
    s.read("min_time", c.latency.min_time, "a number of seconds >= 0");
    s.read("feedback", c.latency.feedback, "a number of front candidates >= 0");
    if (c.latency.feedback < 0) s.fail("feedback", "must be >= 0");
    if (c.latency.feedback > 0 && c.latency.method != "predicted") {
      s.fail("feedback", "re-measures candidates to refit the predictor: it needs method: predicted");
    }
    s.read("confirm_rounds", c.latency.confirm_rounds, "an integer >= 0 (0: off)");
    if (c.latency.confirm_rounds < 0) s.fail("confirm_rounds", "must be >= 0");
  }

  if (top.has("baselines")) {
    const YAML::Node list = top.get("baselines");
    if (!list.IsSequence()) top.fail("baselines", "must be a list of {name, builder|arch|file}");
    for (size_t i = 0; i < list.size(); ++i) {
      const YAML::Node n = list[i];
      const std::string prefix = "baselines." + std::to_string(i);
      Section s(n, prefix, file, {"name", "builder", "arch", "file"});
      BaselineSpec b;
      b.location = where(file, n);
      s.read("name", b.name, "a string");
      if (b.name.empty()) s.fail("name", "is required");
      for (const BaselineSpec& other : c.baselines) {
        if (other.name == b.name) s.fail("name", "'" + b.name + "' is used twice");
      }
      const int sources = (s.has("builder") ? 1 : 0) + (s.has("arch") ? 1 : 0) + (s.has("file") ? 1 : 0);
      if (sources != 1) throw Error(b.location + ": '" + prefix + "' needs exactly one of 'builder', 'arch' and 'file'");
      if (s.has("builder")) b.builder = train::parse_builder_spec(s.get("builder"), file);
      if (s.has("arch")) {
        std::string text;
        s.read("arch", text, "an architecture encoding (e.g. r28-w0.5|k3e1.relu6|...)");
        try {
          b.arch = arch::parse_arch(text);
        } catch (const Error& e) {
          s.fail("arch", std::string("is not an architecture encoding: ") + e.what());
        }
        std::string why;
        if (!arch::arch_in_space(c.space, *b.arch, &why)) s.fail("arch", "is not in the search space: " + why);
      }
      if (s.has("file")) {
        s.read("file", b.model_file, "a model path");
        if (fs::path(b.model_file).is_relative()) b.model_file = (base / b.model_file).lexically_normal().string();
        if (!fs::exists(b.model_file)) s.fail("file", "names '" + b.model_file + "', which does not exist");
      }
      c.baselines.push_back(std::move(b));
    }
  }

  if (top.has("output")) {
    Section s(top.get("output"), "output", file, {"dir"});
    s.read("dir", c.output_dir, "a folder");
  }
  if (c.output_dir.empty()) c.output_dir = (fs::path("nas-out") / c.name).string();
  c.output_dir = fs::absolute(c.output_dir).lexically_normal().string();

  // Validate strategy and pruner options now, so a typo fails before any training.
  make_strategy(c);
  make_pruner(c);

  YAML::Emitter em;
  em << root;
  c.resolved_yaml = em.c_str();
  return c;
}

NasConfig load_nas_config(const std::string& path, const std::vector<std::string>& overrides) {
  if (!fs::exists(path)) throw Error(path + ": no such NAS config");
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    throw Error(path + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                ": invalid YAML: " + e.msg);
  }
  for (const std::string& o : overrides) config::apply_override(root, config::parse_override(o));
  return parse_nas_config(root, path);
}

SearchSpace make_search_space(const NasConfig& config) {
  const arch::SearchSpace& a = config.space;
  SearchSpace out;
  add_decision(out, "resolution", a.resolutions);
  add_decision(out, "width", a.width_multipliers);
  add_decision(out, "stem_stride", a.stem_strides);
  for (size_t s = 0; s < a.stages.size(); ++s) {
    const arch::StageSpace& st = a.stages[s];
    add_decision(out, stage_key(s) + ".depth", st.depths);
    const int64_t max_depth = *std::max_element(st.depths.begin(), st.depths.end());
    for (int64_t b = 0; b < max_depth; ++b) {
      const std::string k = block_key(s, static_cast<size_t>(b));
      add_decision(out, k + ".kernel", st.kernels);
      add_decision(out, k + ".expansion", st.expansions);
      add_decision(out, k + ".se", st.se);
      add_decision(out, k + ".activation", st.activations);
    }
  }
  // Block choices past a stage's depth build nothing: the canonical form resets them (the
  // architecture's round trip), keeping the hyper-parameters.
  out.set_canonicalizer([space = a](const TrialParams& p) {
    TrialParams c = params_from_arch(space, arch_from_params(space, p));
    for (const auto& [name, value] : p) {
      if (name.rfind("hp.", 0) == 0) c[name] = value;
    }
    return c;
  });
  for (const HyperParamSpec& h : config.hyperparameters) {
    const std::string name = "hp." + h.name;
    if (const auto* f = std::get_if<FloatDistribution>(&h.distribution)) out.add_float(name, f->low, f->high, f->log);
    if (const auto* i = std::get_if<IntDistribution>(&h.distribution)) out.add_int(name, i->low, i->high, i->step, i->log);
    if (const auto* c = std::get_if<CategoricalDistribution>(&h.distribution)) out.add_categorical(name, c->choices);
  }
  return out;
}

arch::Arch arch_from_params(const arch::SearchSpace& space, const TrialParams& params) {
  arch::Arch a;
  a.resolution = pick(params, "resolution", space.resolutions);
  a.width = pick(params, "width", space.width_multipliers);
  a.stem_stride = arch::canonical_stem_stride(space, pick(params, "stem_stride", space.stem_strides));
  for (size_t s = 0; s < space.stages.size(); ++s) {
    const arch::StageSpace& st = space.stages[s];
    const int64_t depth = pick(params, stage_key(s) + ".depth", st.depths);
    std::vector<arch::BlockChoice> blocks;
    for (int64_t b = 0; b < depth; ++b) {
      const std::string k = block_key(s, static_cast<size_t>(b));
      arch::BlockChoice c;
      c.kernel = pick(params, k + ".kernel", st.kernels);
      c.expansion = pick(params, k + ".expansion", st.expansions);
      c.se = pick(params, k + ".se", st.se);
      c.activation = pick(params, k + ".activation", st.activations);
      blocks.push_back(c);
    }
    a.stages.push_back(std::move(blocks));
  }
  return a;
}

TrialParams params_from_arch(const arch::SearchSpace& space, const arch::Arch& a) {
  std::string why;
  if (!arch::arch_in_space(space, a, &why)) throw Error("nas: architecture " + a.to_string() + " is not in the space: " + why);
  TrialParams p;
  auto set = [&p](const std::string& name, const auto& values, const auto& value) {
    if (values.size() <= 1) return;
    using T = std::decay_t<decltype(value)>;
    if constexpr (std::is_same_v<T, bool>) p[name] = static_cast<int64_t>(value ? 1 : 0);
    else if constexpr (std::is_integral_v<T>) p[name] = static_cast<int64_t>(value);
    else p[name] = value;
  };
  set("resolution", space.resolutions, a.resolution);
  set("width", space.width_multipliers, a.width);
  set("stem_stride", space.stem_strides, arch::stem_stride(space, a));
  for (size_t s = 0; s < space.stages.size(); ++s) {
    const arch::StageSpace& st = space.stages[s];
    set(stage_key(s) + ".depth", st.depths, static_cast<int64_t>(a.stages[s].size()));
    const int64_t max_depth = *std::max_element(st.depths.begin(), st.depths.end());
    for (int64_t b = 0; b < max_depth; ++b) {
      const std::string k = block_key(s, static_cast<size_t>(b));
      const bool active = b < static_cast<int64_t>(a.stages[s].size());
      const arch::BlockChoice c = active ? a.stages[s][static_cast<size_t>(b)]
                                         : arch::BlockChoice{st.kernels.front(), st.expansions.front(),
                                                             static_cast<bool>(st.se.front()), st.activations.front()};
      set(k + ".kernel", st.kernels, c.kernel);
      set(k + ".expansion", st.expansions, c.expansion);
      set(k + ".se", st.se, c.se);
      set(k + ".activation", st.activations, c.activation);
    }
  }
  return p;
}

train::TrainConfig recipe_for(const NasConfig& config, const TrialParams& params) {
  train::TrainConfig t = config.recipe;
  for (const HyperParamSpec& h : config.hyperparameters) {
    const auto it = params.find("hp." + h.name);
    if (it == params.end()) throw Error("nas: trial parameters lack 'hp." + h.name + "'");
    const double v = param_value_number(it->second);
    if (h.name == "lr") t.schedule.base_lr = v;
    else if (h.name == "weight_decay") t.optimizer.weight_decay = v;
    else if (h.name == "epochs") t.epochs = static_cast<int>(v);
    else if (h.name == "batch_size") t.batch_size = static_cast<int64_t>(v);
  }
  return t;
}

std::vector<Direction> objective_directions(const NasConfig& config) {
  std::vector<Direction> d{Direction::kMaximize};
  if (config.objectives.size() > 1) d.push_back(Direction::kMinimize);
  return d;
}

std::unique_ptr<Strategy> make_strategy(const NasConfig& config) {
  const YAML::Node& o = config.strategy_options;
  const auto allowed = [&](std::vector<std::string> keys) {
    keys.push_back("type");
    if (o && o.IsMap()) Section(o, "strategy", config.file, keys);
  };
  try {
    SearchSpace space = make_search_space(config);
    std::vector<Direction> dirs = objective_directions(config);
    if (config.strategy == "random") {
      allowed({});
      return std::make_unique<RandomSearch>(std::move(space), dirs, config.seed);
    }
    if (config.strategy == "evolution") {
      allowed({"population_size", "sample_size", "sigma"});
      AgingEvolutionOptions opt;
      opt.population_size = static_cast<int>(int_or(o, "population_size", opt.population_size));
      opt.sample_size = static_cast<int>(int_or(o, "sample_size", opt.sample_size));
      opt.sigma = double_or(o, "sigma", opt.sigma);
      return std::make_unique<AgingEvolution>(std::move(space), dirs, config.seed, opt);
    }
    if (config.strategy == "tpe") {
      allowed({"n_startup_trials", "n_ei_candidates"});
      TpeOptions opt;
      opt.n_startup_trials = static_cast<int>(int_or(o, "n_startup_trials", opt.n_startup_trials));
      opt.n_ei_candidates = static_cast<int>(int_or(o, "n_ei_candidates", opt.n_ei_candidates));
      return std::make_unique<Tpe>(std::move(space), dirs, config.seed, opt);
    }
    allowed({"population_size", "mutation_prob", "crossover_prob"});
    Nsga2Options opt;
    opt.population_size = static_cast<int>(int_or(o, "population_size", opt.population_size));
    if (o && o.IsMap() && o["mutation_prob"]) opt.mutation_prob = o["mutation_prob"].as<double>();
    opt.crossover_prob = double_or(o, "crossover_prob", opt.crossover_prob);
    return std::make_unique<Nsga2>(std::move(space), dirs, config.seed, opt);
  } catch (const YAML::Exception& e) {
    throw Error(where(config.file, o) + ": 'strategy' options must be numbers: " + e.msg);
  } catch (const Error& e) {
    const std::string msg = e.what();
    if (msg.rfind(config.file, 0) == 0) throw;
    throw Error(config.file + ": strategy '" + config.strategy + "': " + msg);
  }
}

std::unique_ptr<Pruner> make_pruner(const NasConfig& config) {
  const YAML::Node& o = config.pruner_options;
  try {
    if (config.pruner == "none") return nullptr;
    if (config.pruner == "median") {
      if (o && o.IsMap()) Section(o, "pruner", config.file, {"type", "n_startup_trials", "n_warmup_steps", "interval_steps"});
      MedianPrunerOptions opt;
      opt.n_startup_trials = static_cast<int>(int_or(o, "n_startup_trials", opt.n_startup_trials));
      opt.n_warmup_steps = int_or(o, "n_warmup_steps", opt.n_warmup_steps);
      opt.interval_steps = int_or(o, "interval_steps", opt.interval_steps);
      return std::make_unique<MedianPruner>(Direction::kMaximize, opt);
    }
    if (o && o.IsMap()) Section(o, "pruner", config.file, {"type", "min_resource", "reduction_factor"});
    SuccessiveHalvingOptions opt;
    opt.min_resource = int_or(o, "min_resource", opt.min_resource);
    opt.reduction_factor = int_or(o, "reduction_factor", opt.reduction_factor);
    return std::make_unique<SuccessiveHalvingPruner>(Direction::kMaximize, opt);
  } catch (const YAML::Exception& e) {
    throw Error(where(config.file, o) + ": 'pruner' options must be numbers: " + e.msg);
  } catch (const Error& e) {
    const std::string msg = e.what();
    if (msg.rfind(config.file, 0) == 0) throw;
    throw Error(config.file + ": pruner '" + config.pruner + "': " + msg);
  }
}

}  // namespace xnn::nas
