#include "nas/search/random_search.h"

namespace xnn::nas {

RandomSearch::RandomSearch(SearchSpace space, std::vector<Direction> directions, uint64_t seed)
    : Strategy(std::move(space), std::move(directions), seed) {}

TrialParams RandomSearch::ask(int64_t draw) {
  auto rng = derive_rng(seed_, static_cast<uint64_t>(draw));
  return space_.sample(rng);
}

void RandomSearch::tell(const Trial& trial) { check_told(trial); }

}  // namespace xnn::nas
