#include "nas/oneshot/objective_server.h"

#include <filesystem>
#include <istream>
#include <map>
#include <ostream>
#include <sstream>

#include "engine/core/error.h"
#include "harness/store/store.h"
#include "harness/util/json.h"
#include "nas/oneshot/subnet_objective.h"
#include "nas/study/study.h"

namespace fs = std::filesystem;

namespace xnn::nas {
namespace {

struct Scored {
  CandidateResult result;
  TrialOutcome outcome;
};

bool feasible(const TrialOutcome& o) {
  for (double c : o.constraints) {
    if (c > 0) return false;
  }
  return true;
}

void write_result(std::ostream& out, const Scored& s, bool cached, int trial) {
  json::Writer w;
  w.begin_object();
  if (trial >= 0) w.field("trial", trial);
  w.field("arch", s.result.arch);
  w.key("values").begin_array();
  for (double v : s.outcome.values) w.value(v);
  w.end_array();
  w.key("constraints").begin_array();
  for (double v : s.outcome.constraints) w.value(v);
  w.end_array();
  w.field("feasible", feasible(s.outcome)).field("cached", cached);
  w.field("latency_ms", s.result.latency_ms).field("params", s.result.params);
  w.end_object();
  out << w.str() << "\n" << std::flush;
}

void write_error(std::ostream& out, const std::string& message) {
  json::Writer w;
  w.begin_object().field("error", message).end_object();
  out << w.str() << "\n" << std::flush;
}

}  // namespace

void serve_subnet_objective(const NasConfig& config, const LatencyFn& latency, std::istream& in, std::ostream& out,
                            const train::ProgressFn& progress) {
  SubnetObjective scorer(config, latency, progress);
  const NasConfig& sub = scorer.search_config();
  const SearchSpace space = make_search_space(sub);
  const std::string model_path = (fs::path(config.output_dir) / "objective_server" / "subnet.xnn").string();

  std::map<std::string, Scored> cache;  // by architecture encoding
  const auto score = [&](const TrialParams& params, bool* cached) -> const Scored& {
    const arch::Arch a = arch_from_params(sub.space, params);
    const std::string key = a.to_string();
    const auto it = cache.find(key);
    *cached = it != cache.end();
    if (*cached) return it->second;
    Scored s;
    s.result = scorer.score(a, model_path);
    s.outcome = candidate_outcome(sub, s.result);
    return cache.emplace(key, std::move(s)).first->second;
  };

  {
    json::Writer w;
    w.begin_object().field("ready", true).key("space").raw(space.to_json());
    w.key("params").begin_array();
    for (const Param& p : space.params()) w.value(p.name);
    w.end_array();
    w.key("objectives").begin_array();
    for (const std::string& o : sub.objectives) w.value(o);
    w.end_array();
    w.key("directions").begin_array();
    for (Direction d : objective_directions(sub)) w.value(direction_name(d));
    w.end_array();
    w.key("constraints").begin_array();
    for (const ConstraintSpec& c : sub.constraints) w.value(c.metric);
    w.end_array();
    w.end_object();
    out << w.str() << "\n" << std::flush;
  }

  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string verb;
    if (!(words >> verb)) continue;
    try {
      if (verb == "quit") break;
      if (verb == "evaluate") {
        std::vector<double> internal;
        double v = 0;
        while (words >> v) internal.push_back(v);
        if (!words.eof()) throw Error("evaluate: values must be numbers");
        if (internal.size() != space.size()) {
          throw Error("evaluate: " + std::to_string(internal.size()) + " values for " + std::to_string(space.size()) +
                      " parameters");
        }
        TrialParams params;
        for (size_t i = 0; i < space.size(); ++i) {
          params[space.params()[i].name] = space.from_internal(i, internal[i]);
          // from_internal rounds; a value off the distribution is an error, not a silent snap.
          if (space.to_internal(i, params[space.params()[i].name]) != internal[i]) {
            throw Error("evaluate: value " + std::to_string(internal[i]) + " is not one of parameter '" +
                        space.params()[i].name + "''s internal values");
          }
        }
        bool cached = false;
        const Scored& scored = score(params, &cached);  // before reading `cached`
        write_result(out, scored, cached, -1);
      } else if (verb == "search") {
        std::string strategy;
        int64_t seed = 0;
        int trials = 0;
        if (!(words >> strategy >> seed >> trials) || trials < 1) {
          throw Error("search: expected 'search STRATEGY SEED TRIALS' with TRIALS >= 1");
        }
        if (strategy != "random" && strategy != "evolution" && strategy != "tpe" && strategy != "nsga2") {
          throw Error("search: unknown strategy '" + strategy + "' (expected random, evolution, tpe or nsga2)");
        }
        NasConfig c = sub;
        if (strategy != c.strategy) c.strategy_options = YAML::Node();
        c.strategy = strategy;
        c.seed = static_cast<uint64_t>(seed);
        Store memory(":memory:");
        Study study(memory, "search." + strategy + "." + std::to_string(seed), make_strategy(c));
        int trial = 0;
        const Objective objective = [&](TrialContext& ctx) {
          bool cached = false;
          try {
            const Scored& s = score(ctx.params(), &cached);
            write_result(out, s, cached, trial);
            return s.outcome;
          } catch (const std::exception& e) {
            json::Writer w;
            w.begin_object().field("trial", trial).field("error", e.what()).end_object();
            out << w.str() << "\n" << std::flush;
            throw;  // the study records the trial as failed
          }
        };
        for (; trial < trials; ++trial) study.optimize(objective, 1);
        json::Writer w;
        w.begin_object().field("done", true).end_object();
        out << w.str() << "\n" << std::flush;
      } else {
        throw Error("unknown request '" + verb + "' (expected evaluate, search or quit)");
      }
    } catch (const std::exception& e) {
      write_error(out, e.what());
    }
  }
}

}  // namespace xnn::nas
