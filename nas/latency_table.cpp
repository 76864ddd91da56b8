#include "nas/latency_table.h"

#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "engine/core/error.h"
#include "engine/format/xnn_format.h"
#include "harness/util/json.h"

namespace fs = std::filesystem;

namespace xnn::nas {
namespace {

// Output side of a "same"-padded convolution with an odd kernel.
int64_t strided(int64_t side, int64_t stride) { return (side - 1) / stride + 1; }

std::shared_ptr<Model> finish(arch::GraphBuilder& b, int y, const std::string& name) {
  Graph& g = b.g();
  g.name = name;
  g.value(y).name = "output";
  g.outputs.push_back(y);
  g.validate("latency table model");
  auto m = b.model();
  // HardSwish is an opset-14 op (train_and_measure raises the opset the same way).
  m->opset = 14;
  m->metadata.producer = "xnn-lab nas latency table";
  return m;
}

// The last stage's output channels and side: the head's input.
std::pair<int64_t, int64_t> head_input(const arch::SearchSpace& space, int64_t resolution, double width) {
  int64_t side = strided(resolution, space.stem_stride);
  for (const auto& st : space.stages) side = strided(side, st.stride);
  return {arch::stage_channels(space, space.stages.size() - 1, width), side};
}

}  // namespace

std::string BlockPosition::op_name(size_t op) const {
  if (is_skip(op)) return "skip";
  const arch::BlockChoice& c = candidates.at(op);
  return "k" + std::to_string(c.kernel) + "e" + std::to_string(c.expansion) + (c.se ? "se" : "");
}

std::string BlockPosition::name() const { return "s" + std::to_string(stage) + ".b" + std::to_string(index); }

std::vector<BlockPosition> block_positions(const arch::SearchSpace& space, int64_t resolution, double width,
                                           const std::string& activation) {
  std::vector<BlockPosition> out;
  int64_t side = strided(resolution, space.stem_stride);
  int64_t c = arch::stem_channels(space, width);
  for (size_t s = 0; s < space.stages.size(); ++s) {
    const arch::StageSpace& st = space.stages[s];
    const int64_t out_c = arch::stage_channels(space, s, width);
    const int64_t min_depth = *std::min_element(st.depths.begin(), st.depths.end());
    const int64_t max_depth = *std::max_element(st.depths.begin(), st.depths.end());
    for (int64_t i = 0; i < max_depth; ++i) {
      BlockPosition p;
      p.stage = s;
      p.index = static_cast<size_t>(i);
      p.in_channels = c;
      p.out_channels = out_c;
      p.stride = i == 0 ? st.stride : 1;
      p.in_resolution = side;
      p.optional = i >= min_depth;  // i >= 1 here: stride 1 and in == out channels
      for (int64_t k : st.kernels)
        for (int64_t e : st.expansions)
          for (bool se : st.se) p.candidates.push_back(arch::BlockChoice{k, e, se, activation});
      out.push_back(std::move(p));
      side = strided(side, i == 0 ? st.stride : 1);
      c = out_c;
    }
  }
  return out;
}

double LatencyTable::predict_ms(const std::vector<size_t>& ops) const {
  if (ops.size() != positions.size()) throw Error("latency table: one op per position expected");
  double t = stem_ms + head_ms;
  for (size_t p = 0; p < ops.size(); ++p) t += latency_ms.at(p).at(ops[p]);
  return t;
}

std::shared_ptr<Model> block_model(const arch::SearchSpace& space, const BlockPosition& position, size_t op) {
  if (position.is_skip(op)) throw Error("latency table: 'skip' has no model (its cost is 0)");
  arch::GraphBuilder b(0);
  const int x = b.input(1, position.in_channels, position.in_resolution);
  const int y = b.block("block", x, position.in_channels, position.out_channels, position.stride,
                        position.candidates.at(op), space.channel_divisor);
  return finish(b, y, position.name() + "." + position.op_name(op));
}

std::string latency_table_path(const std::string& dir) { return (fs::path(dir) / "latency_table.json").string(); }

LatencyTable build_latency_table(const arch::SearchSpace& space, int64_t resolution, double width,
                                 const std::string& activation, const std::string& source,
                                 const ModelLatencyFn& latency, const std::string& dir,
                                 const std::function<void(const std::string&)>& progress) {
  LatencyTable t;
  t.positions = block_positions(space, resolution, width, activation);
  // The key names everything an entry depends on: the shapes, the candidates, the source.
  std::string key = source + "|r" + std::to_string(resolution) + "|stem" + std::to_string(space.in_channels) + ">" +
                    std::to_string(arch::stem_channels(space, width)) + "s" + std::to_string(space.stem_stride) + "." +
                    space.stem_activation + "|head" + std::to_string(arch::head_channels(space, width)) + "." +
                    space.head_activation + "c" + std::to_string(space.classes);
  for (const BlockPosition& p : t.positions) {
    key += "|" + p.name() + ":" + std::to_string(p.in_channels) + ">" + std::to_string(p.out_channels) + "@" +
           std::to_string(p.in_resolution) + "s" + std::to_string(p.stride) + "." + activation;
    for (size_t op = 0; op < p.op_count(); ++op) key += "," + p.op_name(op);
  }
  t.key = key;

  const std::string path = latency_table_path(dir);
  if (fs::exists(path)) {
    try {
      const YAML::Node j = YAML::LoadFile(path);
      if (j["key"] && j["key"].as<std::string>() == key) {
        t.stem_ms = j["stem_ms"].as<double>();
        t.head_ms = j["head_ms"].as<double>();
        const YAML::Node entries = j["positions"];
        for (size_t p = 0; p < t.positions.size(); ++p) {
          std::vector<double> row;
          for (size_t op = 0; op < t.positions[p].op_count(); ++op)
            row.push_back(entries[p]["latency_ms"][op].as<double>());
          t.latency_ms.push_back(std::move(row));
        }
        t.reused = true;
        if (progress) progress("latency table: re-using " + path);
        return t;
      }
      if (progress)
        progress("latency table: " + path + " was measured for other positions or another target; measuring again");
    } catch (const YAML::Exception& e) {
      if (progress) progress("latency table: " + path + " is unreadable (" + e.what() + "); measuring again");
    }
    t.latency_ms.clear();
  }

  const fs::path models = fs::path(dir) / "models";
  fs::create_directories(models);
  const auto measure = [&](const std::shared_ptr<Model>& m, const std::string& name) {
    const std::string file = (models / (name + ".xnn")).string();
    save_xnn(*m, file);
    const double ms = latency(file);
    if (!(ms > 0))
      throw Error("latency table: latency of " + file + " is " + std::to_string(ms) + " ms (expected > 0)");
    return ms;
  };
  {
    arch::GraphBuilder b(0);
    const int x = b.input(1, space.in_channels, resolution);
    const int y = b.conv_bn_act("stem", x, space.in_channels, arch::stem_channels(space, width), 3, space.stem_stride,
                                1, space.stem_activation);
    t.stem_ms = measure(finish(b, y, "stem"), "stem");
  }
  {
    const auto [c, side] = head_input(space, resolution, width);
    arch::GraphBuilder b(0);
    const int x = b.input(1, c, side);
    t.head_ms = measure(finish(b, b.classifier(space, x, c, width), "head"), "head");
  }
  for (const BlockPosition& p : t.positions) {
    std::vector<double> row;
    for (size_t op = 0; op < p.op_count(); ++op) {
      row.push_back(p.is_skip(op) ? 0.0 : measure(block_model(space, p, op), p.name() + "." + p.op_name(op)));
    }
    if (progress) {
      std::string line = "latency table " + p.name() + ":";
      for (size_t op = 0; op < p.op_count(); ++op) line += " " + p.op_name(op) + "=" + json::number(row[op]);
      progress(line);
    }
    t.latency_ms.push_back(std::move(row));
  }

  json::Writer w;
  w.begin_object();
  w.field("key", key);
  w.field("source", source);
  // Full precision: a re-used table must equal the measured one bit for bit.
  const auto exact = [](double v) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return std::string(buf);
  };
  w.key("stem_ms").raw(exact(t.stem_ms));
  w.key("head_ms").raw(exact(t.head_ms));
  w.key("positions").begin_array();
  for (size_t p = 0; p < t.positions.size(); ++p) {
    w.begin_object();
    w.field("position", t.positions[p].name());
    w.key("ops").begin_array();
    for (size_t op = 0; op < t.positions[p].op_count(); ++op) w.value(t.positions[p].op_name(op));
    w.end_array();
    w.key("latency_ms").begin_array();
    for (double v : t.latency_ms[p]) w.raw(exact(v));
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.end_object();
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << w.str() << "\n";
    if (!out) throw Error(tmp + ": cannot write the latency table");
  }
  fs::rename(tmp, path);
  return t;
}

}  // namespace xnn::nas
