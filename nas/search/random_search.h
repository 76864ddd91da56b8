// Random search: every parameter drawn independently (log-uniform where the space says so).
// The baseline every other strategy must beat.
#pragma once
#include "nas/search/strategy.h"

namespace xnn::nas {

class RandomSearch : public Strategy {
 public:
  RandomSearch(SearchSpace space, std::vector<Direction> directions, uint64_t seed);
  TrialParams ask(int64_t draw) override;
  void tell(const Trial& trial) override;
  std::string name() const override { return "random"; }
  std::string config_json() const override { return "{}"; }
};

}  // namespace xnn::nas
