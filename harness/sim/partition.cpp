#include "harness/sim/partition.h"

#include <deque>
#include <set>

#include "engine/core/error.h"

namespace xnn::sim {

Partitioning partition_graph(const Graph& g, const std::vector<Side>& side_in, const std::vector<bool>& free,
                             Side inputs_side) {
  const size_t n = g.nodes.size();
  Partitioning out;
  out.partition_of_node.assign(n, -1);
  out.side_of_node = side_in;

  // Producers and dependency counts (by value; a node reading one value twice counts it once).
  std::vector<long> producer(g.values.size(), -1);
  for (size_t k = 0; k < n; ++k) {
    for (int o : g.nodes[k].outputs) {
      if (o >= 0) producer[static_cast<size_t>(o)] = static_cast<long>(k);
    }
  }
  std::vector<std::vector<size_t>> dependents(n);
  std::vector<int> pending(n, 0);
  for (size_t k = 0; k < n; ++k) {
    std::set<size_t> deps;
    for (int i : g.nodes[k].inputs) {
      if (i >= 0 && producer[static_cast<size_t>(i)] >= 0) deps.insert(static_cast<size_t>(producer[static_cast<size_t>(i)]));
    }
    pending[k] = static_cast<int>(deps.size());
    for (size_t d : deps) dependents[d].push_back(k);
  }

  // Where each value lives: graph inputs on inputs_side; a free node's outputs where its first
  // non-constant input lives; other outputs on their producer's side. Constants: nowhere (-1).
  std::vector<int> home(g.values.size(), -1);
  for (int i : g.inputs) home[static_cast<size_t>(i)] = static_cast<int>(inputs_side);

  std::deque<size_t> ready[2];
  std::deque<size_t> ready_free;
  auto push_ready = [&](size_t k) {
    if (free[k]) ready_free.push_back(k);
    else ready[static_cast<int>(side_in[k])].push_back(k);
  };
  for (size_t k = 0; k < n; ++k) {
    if (pending[k] == 0) push_ready(k);
  }
  auto finish = [&](size_t k) {
    out.order.push_back(k);
    for (size_t d : dependents[k]) {
      if (--pending[d] == 0) push_ready(d);
    }
  };

  Side current = inputs_side;
  if (ready[static_cast<int>(current)].empty() && !ready[1 - static_cast<int>(current)].empty()) {
    current = static_cast<Side>(1 - static_cast<int>(current));
  }
  while (true) {
    if (!ready_free.empty()) {
      const size_t k = ready_free.front();
      ready_free.pop_front();
      int h = -1;
      for (int i : g.nodes[k].inputs) {
        if (i >= 0 && home[static_cast<size_t>(i)] >= 0) {
          h = home[static_cast<size_t>(i)];
          break;
        }
      }
      if (h < 0) h = static_cast<int>(inputs_side);  // a view of constants only
      out.side_of_node[k] = static_cast<Side>(h);
      for (int o : g.nodes[k].outputs) {
        if (o >= 0) home[static_cast<size_t>(o)] = h;
      }
      finish(k);
      continue;
    }
    auto& q = ready[static_cast<int>(current)];
    if (q.empty()) {
      if (ready[1 - static_cast<int>(current)].empty()) break;
      current = static_cast<Side>(1 - static_cast<int>(current));
      continue;
    }
    const size_t k = q.front();
    q.pop_front();
    if (out.partitions.empty() || out.partitions.back().side != current) {
      out.partitions.push_back(Partition{out.partitions.size(), current, {}});
    }
    out.partitions.back().nodes.push_back(k);
    out.partition_of_node[k] = static_cast<int>(out.partitions.size() - 1);
    for (int o : g.nodes[k].outputs) {
      if (o >= 0) home[static_cast<size_t>(o)] = static_cast<int>(current);
    }
    finish(k);
  }
  if (out.order.size() != n) throw Error("graph '" + g.name + "' has a cycle; cannot partition it");

  // Crossings: a non-free node reading a value that lives on the other side (once per value and
  // reading partition), and graph outputs that do not live on inputs_side.
  std::set<std::pair<int, int>> seen;
  for (size_t k : out.order) {
    const int p = out.partition_of_node[k];
    if (p < 0) continue;
    const int side = static_cast<int>(out.partitions[static_cast<size_t>(p)].side);
    for (int i : g.nodes[k].inputs) {
      if (i < 0 || home[static_cast<size_t>(i)] < 0 || home[static_cast<size_t>(i)] == side) continue;
      if (!seen.insert({i, p}).second) continue;
      out.crossings.push_back(Crossing{i, static_cast<Side>(home[static_cast<size_t>(i)]), p, k});
    }
  }
  for (int o : g.outputs) {
    const int h = home[static_cast<size_t>(o)];
    if (h < 0 || h == static_cast<int>(inputs_side)) continue;
    const long prod = producer[static_cast<size_t>(o)];
    out.crossings.push_back(Crossing{o, static_cast<Side>(h), -1, prod >= 0 ? static_cast<size_t>(prod) : 0});
  }
  return out;
}

}  // namespace xnn::sim
