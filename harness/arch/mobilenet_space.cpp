#include "harness/arch/mobilenet_space.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <sstream>

#include "engine/core/error.h"
#include "engine/format/file_io.h"
#include "engine/format/xnn_format.h"
#include "engine/runtime/graph_cost.h"
#include "harness/config/yaml_section.h"

namespace fs = std::filesystem;

namespace xnn::arch {
namespace {

// ---------------------------------------------------------------------------------------------
// YAML helpers: every error names FILE:LINE:COL, the key and what was expected.

std::string where(const std::string& file, const YAML::Node& n) { return config::yaml_where(file, n); }

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

template <typename T>
T scalar(const YAML::Node& n, const std::string& key, const std::string& file, const std::string& expected) {
  if (!n.IsScalar()) throw Error(where(file, n) + ": '" + key + "' must be " + expected);
  try {
    return n.as<T>();
  } catch (const YAML::Exception&) {
    throw Error(where(file, n) + ": '" + key + "' must be " + expected);
  }
}

// A non-empty list of distinct scalars, each checked by `valid`.
template <typename T, typename Valid>
std::vector<T> choices(const YAML::Node& n, const std::string& key, const std::string& file,
                       const std::string& expected, Valid valid) {
  const std::string what = "a non-empty list of distinct " + expected;
  if (!n.IsSequence() || n.size() == 0) throw Error(where(file, n) + ": '" + key + "' must be " + what);
  std::vector<T> out;
  for (const auto& item : n) {
    const T v = scalar<T>(item, key, file, what);
    if (!valid(v)) throw Error(where(file, item) + ": '" + key + "' must be " + what);
    if (std::find(out.begin(), out.end(), v) != out.end()) {
      throw Error(where(file, item) + ": '" + key + "' lists a choice twice (expected " + what + ")");
    }
    out.push_back(v);
  }
  return out;
}

void check_keys(const YAML::Node& map, const std::string& prefix, const std::string& file,
                const std::vector<std::string>& allowed) {
  for (const auto& kv : map) {
    const std::string key = kv.first.as<std::string>();
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      throw Error(where(file, kv.first) + ": unknown key '" + prefix + key + "' (expected " + join(allowed) + ")");
    }
  }
}

bool is_activation(const std::string& a) {
  const auto& v = supported_activations();
  return std::find(v.begin(), v.end(), a) != v.end();
}

std::string activation_value(const YAML::Node& n, const std::string& key, const std::string& file) {
  const std::string expected = "one of " + join(supported_activations());
  const std::string a = scalar<std::string>(n, key, file, expected);
  if (!is_activation(a)) throw Error(where(file, n) + ": '" + key + "' is '" + a + "'; expected " + expected);
  return a;
}

int64_t positive_int(const YAML::Node& n, const std::string& key, const std::string& file) {
  const int64_t v = scalar<int64_t>(n, key, file, "a positive integer");
  if (v <= 0) throw Error(where(file, n) + ": '" + key + "' must be a positive integer");
  return v;
}

int64_t stride_value(const YAML::Node& n, const std::string& key, const std::string& file) {
  const int64_t v = scalar<int64_t>(n, key, file, "1 or 2");
  if (v != 1 && v != 2) throw Error(where(file, n) + ": '" + key + "' must be 1 or 2");
  return v;
}

// The per-block choice lists a stage may set or inherit from `block_choices`.
struct BlockLists {
  std::vector<int64_t> kernels = {3};
  std::vector<int64_t> expansions = {6};
  std::vector<bool> se = {false};
  std::vector<std::string> activations = {"relu6"};
};

// Reads the block-choice keys present in `map` into `lists`; other keys are left to the caller.
void read_block_lists(const YAML::Node& map, const std::string& prefix, const std::string& file, BlockLists& lists) {
  if (const YAML::Node n = map["kernels"]) {
    lists.kernels = choices<int64_t>(n, prefix + "kernels", file, "odd positive integers (e.g. [3, 5, 7])",
                                     [](int64_t k) { return k > 0 && k % 2 == 1; });
  }
  if (const YAML::Node n = map["expansions"]) {
    lists.expansions = choices<int64_t>(n, prefix + "expansions", file, "integers >= 1 (e.g. [1, 3, 6])",
                                        [](int64_t e) { return e >= 1; });
  }
  if (const YAML::Node n = map["se"]) {
    lists.se = choices<bool>(n, prefix + "se", file, "booleans (e.g. [false, true])", [](bool) { return true; });
  }
  if (const YAML::Node n = map["activations"]) {
    lists.activations = choices<std::string>(n, prefix + "activations", file,
                                             "activation names (" + join(supported_activations()) + ")", is_activation);
  }
}

// ---------------------------------------------------------------------------------------------
// Random draws from the raw generator output, which the standard fixes (the distributions of
// <random> are implementation-defined), so a seed gives the same architectures everywhere.

size_t pick(size_t n, std::mt19937_64& rng) { return static_cast<size_t>(rng() % n); }
double unit(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

// An index different from `current` among n >= 2.
size_t pick_other(size_t n, size_t current, std::mt19937_64& rng) { return (current + 1 + pick(n - 1, rng)) % n; }

template <typename T>
size_t index_of(const std::vector<T>& v, const T& x) {
  return static_cast<size_t>(std::find(v.begin(), v.end(), x) - v.begin());
}

size_t width_index(const SearchSpace& space, double w) {
  for (size_t i = 0; i < space.width_multipliers.size(); ++i) {
    if (std::abs(space.width_multipliers[i] - w) <= 1e-9 * std::max(1.0, std::abs(w))) return i;
  }
  return space.width_multipliers.size();
}

// Draws one choice of a decision: uniformly, or, given a size in [0, 1], favouring the choices
// whose rank among the sorted values is near it (0: the smallest value, 1: the largest), with a
// Gaussian weight of standard deviation kSizeSpread in normalised rank (0..1). Sizes drawn per architecture
// spread a generated set from the cheapest corner of the space to the costliest, which uniform
// draws (every decision independent) almost never reach.
class ChoiceDrawer {
 public:
  static constexpr double kSizeSpread = 0.3;
  explicit ChoiceDrawer(std::mt19937_64& rng, double size = -1) : rng_(rng), size_(size) {}

  // `ordered`: larger values cost more (kernels, expansions, depths, ...); activations are not.
  template <typename T>
  T draw(const std::vector<T>& v, bool ordered = true) {
    if (size_ < 0 || !ordered || v.size() == 1) return v[pick(v.size(), rng_)];
    std::vector<double> weight(v.size());
    double total = 0;
    for (size_t i = 0; i < v.size(); ++i) {
      size_t rank = 0;
      for (size_t j = 0; j < v.size(); ++j) rank += v[j] < v[i];
      const double d = static_cast<double>(rank) / static_cast<double>(v.size() - 1) - size_;
      weight[i] = std::exp(-d * d / (2 * kSizeSpread * kSizeSpread));
      total += weight[i];
    }
    double u = unit(rng_) * total;
    for (size_t i = 0; i + 1 < v.size(); ++i) {
      if (u < weight[i]) return v[i];
      u -= weight[i];
    }
    return v.back();
  }

 private:
  std::mt19937_64& rng_;
  double size_;
};

BlockChoice sample_block(const StageSpace& st, ChoiceDrawer& draw) {
  BlockChoice b;
  b.kernel = draw.draw(st.kernels);
  b.expansion = draw.draw(st.expansions);
  b.se = draw.draw(st.se);
  b.activation = draw.draw(st.activations, /*ordered=*/false);
  return b;
}

Arch sample_with(const SearchSpace& space, ChoiceDrawer& draw) {
  Arch a;
  a.resolution = draw.draw(space.resolutions);
  a.width = draw.draw(space.width_multipliers);
  if (space.stem_strides.size() > 1) {
    // A larger stride costs less: drawn by its negation so that sized draws rank it as a cost.
    std::vector<int64_t> negated;
    for (int64_t v : space.stem_strides) negated.push_back(-v);
    a.stem_stride = canonical_stem_stride(space, -draw.draw(negated));
  }
  for (const StageSpace& st : space.stages) {
    const int64_t depth = draw.draw(st.depths);
    std::vector<BlockChoice> blocks;
    for (int64_t b = 0; b < depth; ++b) blocks.push_back(sample_block(st, draw));
    a.stages.push_back(std::move(blocks));
  }
  return a;
}

std::string format_width(double w) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.10g", w);
  return buf;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  parts.push_back(cur);
  return parts;
}

// A whole non-negative decimal integer, or -1.
int64_t parse_count(const std::string& s) {
  if (s.empty() || s.size() > 9 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) return -1;
  return std::stoll(s);
}

void require_in_space(const SearchSpace& space, const Arch& arch, const std::string& what) {
  std::string why;
  if (!arch_in_space(space, arch, &why)) throw Error(what + ": architecture '" + arch.to_string() + "' is not in the space: " + why);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

const std::vector<std::string>& supported_activations() {
  static const std::vector<std::string> v = {"relu", "relu6", "hardswish", "silu"};
  return v;
}

int64_t make_divisible(double value, int64_t divisor) {
  const int64_t d = std::max<int64_t>(1, divisor);
  int64_t v = std::max<int64_t>(d, static_cast<int64_t>(value + d / 2.0) / d * d);
  if (static_cast<double>(v) < 0.9 * value) v += d;
  return v;
}

// ---------------------------------------------------------------------------------------------
// Parsing the space.

SearchSpace parse_search_space(const YAML::Node& node, const std::string& file) {
  if (!node.IsMap()) throw Error(where(file, node) + ": a search space must be a YAML mapping (input, classes, stages, ...)");
  check_keys(node, "", file,
             {"input", "resolutions", "classes", "width_multipliers", "channel_divisor", "stem", "head", "block_choices",
              "stages"});
  SearchSpace s;
  s.source = file;

  const YAML::Node input = node["input"];
  if (!input || !input.IsSequence() || input.size() != 3) {
    throw Error(where(file, input ? input : node) + ": 'input' must be [C, H, W], e.g. [3, 224, 224]");
  }
  std::vector<int64_t> chw;
  for (const auto& d : input) chw.push_back(positive_int(d, "input", file));
  if (chw[1] != chw[2]) {
    throw Error(where(file, input) + ": 'input' must be square (H == W): resolutions are square sides");
  }
  s.in_channels = chw[0];
  s.resolutions = {chw[1]};
  if (const YAML::Node n = node["resolutions"]) {
    s.resolutions = choices<int64_t>(n, "resolutions", file, "positive integers (square input sides)",
                                     [](int64_t r) { return r > 0; });
  }
  if (const YAML::Node n = node["classes"]) {
    s.classes = scalar<int64_t>(n, "classes", file, "an integer >= 2");
    if (s.classes < 2) throw Error(where(file, n) + ": 'classes' must be an integer >= 2");
  }
  s.width_multipliers = {1.0};
  if (const YAML::Node n = node["width_multipliers"]) {
    s.width_multipliers = choices<double>(n, "width_multipliers", file, "numbers in (0, 4] (e.g. [0.5, 0.75, 1.0])",
                                          [](double w) { return w > 0 && w <= 4; });
  }
  if (const YAML::Node n = node["channel_divisor"]) s.channel_divisor = positive_int(n, "channel_divisor", file);

  if (const YAML::Node n = node["stem"]) {
    if (!n.IsMap()) throw Error(where(file, n) + ": 'stem' must be a mapping {channels, stride, activation}");
    check_keys(n, "stem.", file, {"channels", "stride", "activation"});
    if (n["channels"]) s.stem_channels = positive_int(n["channels"], "stem.channels", file);
    if (const YAML::Node st = n["stride"]) {
      // A list makes the stride a decision; its first entry is the default (see Arch::stem_stride).
      s.stem_strides = st.IsSequence() ? choices<int64_t>(st, "stem.stride", file, "strides, each 1 or 2 (e.g. [1, 2])",
                                                          [](int64_t v) { return v == 1 || v == 2; })
                                       : std::vector<int64_t>{stride_value(st, "stem.stride", file)};
    }
    s.stem_stride = s.stem_strides.front();
    if (n["activation"]) s.stem_activation = activation_value(n["activation"], "stem.activation", file);
  }
  if (const YAML::Node n = node["head"]) {
    if (!n.IsMap()) throw Error(where(file, n) + ": 'head' must be a mapping {channels, activation}");
    check_keys(n, "head.", file, {"channels", "activation"});
    if (n["channels"]) s.head_channels = positive_int(n["channels"], "head.channels", file);
    if (n["activation"]) s.head_activation = activation_value(n["activation"], "head.activation", file);
  }

  BlockLists defaults;
  if (const YAML::Node n = node["block_choices"]) {
    if (!n.IsMap()) throw Error(where(file, n) + ": 'block_choices' must be a mapping {kernels, expansions, se, activations}");
    check_keys(n, "block_choices.", file, {"kernels", "expansions", "se", "activations"});
    read_block_lists(n, "block_choices.", file, defaults);
  }

  const YAML::Node stages = node["stages"];
  if (!stages || !stages.IsSequence() || stages.size() == 0) {
    throw Error(where(file, stages ? stages : node) + ": 'stages' must be a non-empty list of stages {depths, channels, stride, ...}");
  }
  for (size_t i = 0; i < stages.size(); ++i) {
    const YAML::Node st = stages[i];
    const std::string prefix = "stages[" + std::to_string(i) + "].";
    if (!st.IsMap()) throw Error(where(file, st) + ": 'stages[" + std::to_string(i) + "]' must be a mapping {depths, channels, stride, ...}");
    check_keys(st, prefix, file, {"depths", "channels", "stride", "kernels", "expansions", "se", "activations"});
    StageSpace stage;
    stage.location = where(file, st);
    if (!st["depths"]) throw Error(stage.location + ": '" + prefix + "depths' is missing (expected a list such as [1, 2, 3])");
    stage.depths = choices<int64_t>(st["depths"], prefix + "depths", file, "integers >= 1 (e.g. [1, 2, 3])",
                                    [](int64_t d) { return d >= 1; });
    if (!st["channels"]) throw Error(stage.location + ": '" + prefix + "channels' is missing (expected a positive integer)");
    stage.channels = positive_int(st["channels"], prefix + "channels", file);
    if (st["stride"]) stage.stride = stride_value(st["stride"], prefix + "stride", file);
    BlockLists lists = defaults;
    read_block_lists(st, prefix, file, lists);
    stage.kernels = lists.kernels;
    stage.expansions = lists.expansions;
    stage.se = lists.se;
    stage.activations = lists.activations;
    s.stages.push_back(std::move(stage));
  }
  return s;
}

SearchSpace load_search_space(const std::string& path) {
  if (!fs::exists(path)) throw Error(path + ": no such search space file");
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    throw Error(path + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) + ": invalid YAML: " + e.msg);
  }
  return parse_search_space(root, path);
}

// ---------------------------------------------------------------------------------------------
// Architectures: encoding, JSON, membership.

std::string Arch::to_string() const {
  std::ostringstream s;
  s << 'r' << resolution << "-w" << format_width(width);
  if (stem_stride != 0) s << "-s" << stem_stride;
  for (const auto& stage : stages) {
    s << '|';
    for (size_t b = 0; b < stage.size(); ++b) {
      const BlockChoice& c = stage[b];
      s << (b > 0 ? "-" : "") << 'k' << c.kernel << 'e' << c.expansion << (c.se ? "se" : "") << '.' << c.activation;
    }
  }
  return s.str();
}

Arch parse_arch(const std::string& text) {
  const auto fail = [&](const std::string& part, const std::string& expected) -> Error {
    return Error("architecture '" + text + "': '" + part + "' is not " + expected);
  };
  const std::vector<std::string> groups = split(text, '|');
  Arch a;
  const std::vector<std::string> head = split(groups[0], '-');
  if (head.size() < 2 || head.size() > 3 || head[0].size() < 2 || head[0][0] != 'r' || head[1].size() < 2 ||
      head[1][0] != 'w') {
    throw fail(groups[0], "'r<resolution>-w<width>[-s<stem stride>]' (e.g. r160-w0.75 or r28-w0.5-s2)");
  }
  if (head.size() == 3) {
    a.stem_stride = head[2].size() >= 2 && head[2][0] == 's' ? parse_count(head[2].substr(1)) : -1;
    if (a.stem_stride != 1 && a.stem_stride != 2) throw fail(head[2], "'s' and a stem stride of 1 or 2");
  }
  a.resolution = parse_count(head[0].substr(1));
  if (a.resolution <= 0) throw fail(head[0], "'r' and a positive resolution");
  const std::string w = head[1].substr(1);
  char* end = nullptr;
  a.width = std::strtod(w.c_str(), &end);
  if (end != w.c_str() + w.size() || !std::isfinite(a.width) || a.width <= 0) throw fail(head[1], "'w' and a positive width");
  if (groups.size() < 2) throw fail(text, "a resolution-width group followed by '|'-separated stages");
  for (size_t g = 1; g < groups.size(); ++g) {
    std::vector<BlockChoice> stage;
    for (const std::string& tok : split(groups[g], '-')) {
      // k<kernel>e<expansion>[se].<activation>
      const std::string expected = "a block 'k<kernel>e<expansion>[se].<activation>' (e.g. k5e3se.hardswish)";
      const size_t dot = tok.find('.');
      const size_t e = tok.find('e');
      if (tok.empty() || tok[0] != 'k' || dot == std::string::npos || e == std::string::npos || e > dot) throw fail(tok, expected);
      BlockChoice c;
      c.kernel = parse_count(tok.substr(1, e - 1));
      std::string exp = tok.substr(e + 1, dot - e - 1);
      if (exp.size() > 2 && exp.compare(exp.size() - 2, 2, "se") == 0) {
        c.se = true;
        exp.resize(exp.size() - 2);
      }
      c.expansion = parse_count(exp);
      c.activation = tok.substr(dot + 1);
      if (c.kernel <= 0 || c.expansion <= 0 || !is_activation(c.activation)) {
        throw fail(tok, expected + " with a known activation (" + join(supported_activations()) + ")");
      }
      stage.push_back(c);
    }
    a.stages.push_back(std::move(stage));
  }
  return a;
}

void write_arch_json(json::Writer& w, const Arch& arch) {
  w.begin_object();
  w.field("encoding", arch.to_string());
  w.field("resolution", arch.resolution);
  w.field("width", arch.width);
  if (arch.stem_stride != 0) w.field("stem_stride", arch.stem_stride);
  w.key("stages").begin_array();
  for (const auto& stage : arch.stages) {
    w.begin_array();
    for (const BlockChoice& b : stage) {
      w.begin_object();
      w.field("kernel", b.kernel).field("expansion", b.expansion).field("se", b.se).field("activation", b.activation);
      w.end_object();
    }
    w.end_array();
  }
  w.end_array();
  w.end_object();
}

std::string arch_to_json(const Arch& arch) {
  json::Writer w;
  write_arch_json(w, arch);
  return w.str();
}

bool arch_in_space(const SearchSpace& space, const Arch& arch, std::string* why) {
  const auto no = [&](const std::string& reason) {
    if (why) *why = reason;
    return false;
  };
  const auto list = [](const auto& v) {
    std::ostringstream os;
    for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
    return "[" + os.str() + "]";
  };
  if (index_of(space.resolutions, arch.resolution) == space.resolutions.size()) {
    return no("resolution " + std::to_string(arch.resolution) + " is not one of " + list(space.resolutions));
  }
  if (width_index(space, arch.width) == space.width_multipliers.size()) {
    return no("width " + format_width(arch.width) + " is not one of " + list(space.width_multipliers));
  }
  if (arch.stem_stride != 0 && index_of(space.stem_strides, arch.stem_stride) == space.stem_strides.size()) {
    return no("stem stride " + std::to_string(arch.stem_stride) + " is not one of " + list(space.stem_strides));
  }
  if (arch.stages.size() != space.stages.size()) {
    return no(std::to_string(arch.stages.size()) + " stages, the space has " + std::to_string(space.stages.size()));
  }
  for (size_t s = 0; s < arch.stages.size(); ++s) {
    const StageSpace& st = space.stages[s];
    const std::string at = "stage " + std::to_string(s);
    const int64_t depth = static_cast<int64_t>(arch.stages[s].size());
    if (index_of(st.depths, depth) == st.depths.size()) {
      return no(at + ": depth " + std::to_string(depth) + " is not one of " + list(st.depths));
    }
    for (size_t b = 0; b < arch.stages[s].size(); ++b) {
      const BlockChoice& c = arch.stages[s][b];
      const std::string blk = at + " block " + std::to_string(b);
      if (index_of(st.kernels, c.kernel) == st.kernels.size()) {
        return no(blk + ": kernel " + std::to_string(c.kernel) + " is not one of " + list(st.kernels));
      }
      if (index_of(st.expansions, c.expansion) == st.expansions.size()) {
        return no(blk + ": expansion " + std::to_string(c.expansion) + " is not one of " + list(st.expansions));
      }
      if (index_of(st.se, c.se) == st.se.size()) {
        return no(blk + ": se " + std::string(c.se ? "true" : "false") + " is not allowed");
      }
      if (index_of(st.activations, c.activation) == st.activations.size()) {
        return no(blk + ": activation '" + c.activation + "' is not one of [" + join(st.activations) + "]");
      }
    }
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Sampling and mutation.

Arch sample_arch(const SearchSpace& space, std::mt19937_64& rng) {
  ChoiceDrawer uniform(rng);
  return sample_with(space, uniform);
}

Arch sample_arch_sized(const SearchSpace& space, double size, std::mt19937_64& rng) {
  if (!(size >= 0 && size <= 1)) throw Error("sample_arch_sized: size must be in [0, 1], got " + std::to_string(size));
  ChoiceDrawer sized(rng, size);
  return sample_with(space, sized);
}

Arch mutate_arch(const SearchSpace& space, const Arch& arch, std::mt19937_64& rng, double prob) {
  require_in_space(space, arch, "mutate_arch");
  Arch a = arch;
  a.width = space.width_multipliers[width_index(space, arch.width)];  // the space's exact value
  a.stem_stride = canonical_stem_stride(space, stem_stride(space, arch));

  // Every decision with more than one choice, as a function that redraws it to another choice.
  // Block decisions are listed after the depths, so they see the blocks a depth change left.
  const auto decisions = [&]() {
    std::vector<std::function<void()>> d;
    if (space.resolutions.size() > 1) {
      d.push_back([&] {
        a.resolution = space.resolutions[pick_other(space.resolutions.size(), index_of(space.resolutions, a.resolution), rng)];
      });
    }
    if (space.width_multipliers.size() > 1) {
      d.push_back([&] {
        a.width = space.width_multipliers[pick_other(space.width_multipliers.size(), width_index(space, a.width), rng)];
      });
    }
    if (space.stem_strides.size() > 1) {
      d.push_back([&] {
        const size_t current = index_of(space.stem_strides, stem_stride(space, a));
        a.stem_stride = canonical_stem_stride(space, space.stem_strides[pick_other(space.stem_strides.size(), current, rng)]);
      });
    }
    for (size_t s = 0; s < space.stages.size(); ++s) {
      const StageSpace& st = space.stages[s];
      if (st.depths.size() > 1) {
        d.push_back([&, s] {
          auto& blocks = a.stages[s];
          const int64_t depth = st.depths[pick_other(st.depths.size(), index_of(st.depths, static_cast<int64_t>(blocks.size())), rng)];
          while (static_cast<int64_t>(blocks.size()) > depth) blocks.pop_back();
          ChoiceDrawer uniform(rng);
          while (static_cast<int64_t>(blocks.size()) < depth) blocks.push_back(sample_block(st, uniform));
        });
      }
    }
    return d;
  };
  const auto block_decisions = [&]() {
    std::vector<std::function<void()>> d;
    for (size_t s = 0; s < space.stages.size(); ++s) {
      const StageSpace& st = space.stages[s];
      for (size_t b = 0; b < a.stages[s].size(); ++b) {
        BlockChoice& c = a.stages[s][b];
        if (st.kernels.size() > 1)
          d.push_back([&] { c.kernel = st.kernels[pick_other(st.kernels.size(), index_of(st.kernels, c.kernel), rng)]; });
        if (st.expansions.size() > 1)
          d.push_back([&] { c.expansion = st.expansions[pick_other(st.expansions.size(), index_of(st.expansions, c.expansion), rng)]; });
        if (st.se.size() > 1) d.push_back([&] { c.se = st.se[pick_other(st.se.size(), index_of(st.se, c.se), rng)]; });
        if (st.activations.size() > 1)
          d.push_back([&] {
            c.activation = st.activations[pick_other(st.activations.size(), index_of(st.activations, c.activation), rng)];
          });
      }
    }
    return d;
  };

  bool changed = false;
  for (auto& redraw : decisions()) {
    if (unit(rng) < prob) redraw(), changed = true;
  }
  // Built after the depth changes: references into a.stages must not outlive a resize.
  for (auto& redraw : block_decisions()) {
    if (unit(rng) < prob) redraw(), changed = true;
  }
  if (!changed) {
    std::vector<std::function<void()>> all = decisions();
    for (auto& f : block_decisions()) all.push_back(std::move(f));
    if (all.empty()) throw Error("mutate_arch: the space has a single architecture; nothing can change");
    all[pick(all.size(), rng)]();
  }
  return a;
}

// ---------------------------------------------------------------------------------------------
// Graph construction.

GraphBuilder::GraphBuilder(uint64_t seed) : rng_(seed), model_(std::make_shared<Model>()) {}

int GraphBuilder::node(const std::string& op, const std::string& name, std::vector<int> inputs,
                       std::map<std::string, Attribute> attrs) {
  Node n;
  n.op_type = op;
  n.name = name;
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
  Value v;
  v.name = name + "_out";
  v.dtype = DType::kF32;
  n.outputs = {g().add_value(v)};
  g().nodes.push_back(std::move(n));
  return g().nodes.back().outputs[0];
}

// PyTorch's default init: U(±1/√fan_in) for weights and biases (kaiming-uniform with a = √5).
int GraphBuilder::uniform(const std::string& name, const Shape& shape, float bound) {
  Tensor t(DType::kF32, shape);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>((2.0 * unit(rng_) - 1.0) * bound);
  return g().add_constant(name, std::move(t));
}
int GraphBuilder::filled(const std::string& name, const Shape& shape, float v) {
  Tensor t(DType::kF32, shape);
  std::fill(t.data<float>(), t.data<float>() + t.numel(), v);
  return g().add_constant(name, std::move(t));
}

// kxk convolution, "same" padding; a bias only when no BatchNorm follows (β replaces it).
int GraphBuilder::conv(const std::string& name, int x, int64_t cin, int64_t cout, int64_t k, int64_t stride,
                       int64_t group, bool bias) {
  const float bound = 1.0f / std::sqrt(static_cast<float>((cin / group) * k * k));
  std::vector<int> ins = {x, uniform(name + ".weight", {cout, cin / group, k, k}, bound)};
  if (bias) ins.push_back(uniform(name + ".bias", {cout}, bound));
  const int64_t pad = k / 2;
  return node("Conv", name, ins,
              {{"kernel_shape", std::vector<int64_t>{k, k}},
               {"strides", std::vector<int64_t>{stride, stride}},
               {"pads", std::vector<int64_t>{pad, pad, pad, pad}},
               {"group", group}});
}
int GraphBuilder::batch_norm(const std::string& name, int x, int64_t c) {
  return node("BatchNormalization", name,
              {x, filled(name + ".weight", {c}, 1.0f), filled(name + ".bias", {c}, 0.0f),
               filled(name + ".running_mean", {c}, 0.0f), filled(name + ".running_var", {c}, 1.0f)},
              {{"epsilon", 1e-5f}, {"momentum", 0.9f}});
}
int GraphBuilder::activation(const std::string& act, const std::string& name, int x) {
  if (act == "relu") return node("Relu", name + ".relu", {x});
  if (act == "relu6") {
    const int lo = g().add_constant(name + ".relu6_min", Tensor::scalar<float>(0.0f));
    const int hi = g().add_constant(name + ".relu6_max", Tensor::scalar<float>(6.0f));
    return node("Clip", name + ".relu6", {x, lo, hi});
  }
  if (act == "hardswish") return node("HardSwish", name + ".hardswish", {x});
  if (act == "silu") {  // x·sigmoid(x): the ops training has gradients for
    const int s = node("Sigmoid", name + ".silu_sigmoid", {x});
    return node("Mul", name + ".silu", {x, s});
  }
  throw Error("arch: unknown activation '" + act + "' (expected one of " + join(supported_activations()) + ")");
}
int GraphBuilder::conv_bn_act(const std::string& name, int x, int64_t cin, int64_t cout, int64_t k, int64_t stride,
                              int64_t group, const std::string& act) {
  x = conv(name + ".conv", x, cin, cout, k, stride, group, false);
  x = batch_norm(name + ".bn", x, cout);
  return activation(act, name, x);
}

int GraphBuilder::input(int64_t batch, int64_t channels, int64_t resolution) {
  Value in;
  in.name = "input";
  in.dtype = DType::kF32;
  in.has_shape = true;
  in.shape = {batch > 0 ? Dim::fixed(batch) : Dim::named("batch"), Dim::fixed(channels), Dim::fixed(resolution),
              Dim::fixed(resolution)};
  const int x = g().add_value(in);
  g().inputs.push_back(x);
  return x;
}

int GraphBuilder::block(const std::string& name, int x, int64_t cin, int64_t cout, int64_t stride,
                        const BlockChoice& blk, int64_t channel_divisor) {
  const int64_t mid = cin * blk.expansion;
  int y = x;
  if (blk.expansion > 1) y = conv_bn_act(name + ".expand", y, cin, mid, 1, 1, 1, blk.activation);
  y = conv_bn_act(name + ".depthwise", y, mid, mid, blk.kernel, stride, mid, blk.activation);
  if (blk.se) {
    const int64_t squeezed = make_divisible(static_cast<double>(mid) / 4.0, channel_divisor);
    int z = node("GlobalAveragePool", name + ".se.pool", {y});
    z = conv(name + ".se.reduce", z, mid, squeezed, 1, 1, 1, true);
    z = node("Relu", name + ".se.relu", {z});
    z = conv(name + ".se.expand", z, squeezed, mid, 1, 1, 1, true);
    z = node("HardSigmoid", name + ".se.gate", {z}, {{"alpha", 1.0f / 6.0f}, {"beta", 0.5f}});  // PyTorch's hardsigmoid
    y = node("Mul", name + ".se.scale", {y, z});
  }
  y = conv(name + ".project.conv", y, mid, cout, 1, 1, 1, false);
  y = batch_norm(name + ".project.bn", y, cout);
  if (stride == 1 && cin == cout) y = node("Add", name + ".residual", {x, y});
  return y;
}

int GraphBuilder::classifier(const SearchSpace& space, int x, int64_t cin, double width) {
  const int64_t head = head_channels(space, width);
  x = conv_bn_act("head", x, cin, head, 1, 1, 1, space.head_activation);
  x = node("GlobalAveragePool", "pool", {x});
  x = node("Flatten", "flatten", {x}, {{"axis", int64_t{1}}});
  const float bound = 1.0f / std::sqrt(static_cast<float>(head));
  return node("Gemm", "classifier", {x, uniform("classifier.weight", {space.classes, head}, bound),
                                     uniform("classifier.bias", {space.classes}, bound)},
              {{"transB", int64_t{1}}});
}

// ---------------------------------------------------------------------------------------------
// Building the model.

int64_t stem_stride(const SearchSpace& space, const Arch& arch) {
  return arch.stem_stride != 0 ? arch.stem_stride : space.stem_stride;
}

int64_t canonical_stem_stride(const SearchSpace& space, int64_t stride) { return stride == space.stem_stride ? 0 : stride; }

int64_t stage_channels(const SearchSpace& space, size_t s, double width) {
  return make_divisible(static_cast<double>(space.stages.at(s).channels) * width, space.channel_divisor);
}
int64_t stem_channels(const SearchSpace& space, double width) {
  return make_divisible(static_cast<double>(space.stem_channels) * width, space.channel_divisor);
}
int64_t head_channels(const SearchSpace& space, double width) {
  return make_divisible(static_cast<double>(space.head_channels) * std::max(1.0, width), space.channel_divisor);
}

std::shared_ptr<Model> build_arch_model(const SearchSpace& space, const Arch& arch, uint64_t seed, int64_t batch) {
  require_in_space(space, arch, "build_arch_model");
  GraphBuilder b(seed);
  Graph& g = b.g();
  g.name = "mobilenet_space";

  int x = b.input(batch, space.in_channels, arch.resolution);
  int64_t c = stem_channels(space, arch.width);
  x = b.conv_bn_act("stem", x, space.in_channels, c, 3, stem_stride(space, arch), 1, space.stem_activation);
  for (size_t s = 0; s < arch.stages.size(); ++s) {
    const int64_t out = stage_channels(space, s, arch.width);
    for (size_t i = 0; i < arch.stages[s].size(); ++i) {
      const std::string name = "stage" + std::to_string(s) + ".block" + std::to_string(i);
      const int64_t stride = i == 0 ? space.stages[s].stride : 1;
      x = b.block(name, x, c, out, stride, arch.stages[s][i], space.channel_divisor);
      c = out;
    }
  }
  x = b.classifier(space, x, c, arch.width);
  g.value(x).name = "logits";
  g.value(x).has_shape = true;
  g.value(x).shape = {batch > 0 ? Dim::fixed(batch) : Dim::named("batch"), Dim::fixed(space.classes)};
  g.outputs.push_back(x);
  g.validate("build_arch_model");

  auto m = b.model();
  m->opset = 13;
  m->metadata.producer = "xnn-lab arch (MobileNet-like space)";
  m->metadata.options["arch"] = arch.to_string();
  m->metadata.options["seed"] = std::to_string(seed);
  if (!space.source.empty()) m->metadata.options["space"] = space.source;
  return m;
}

// ---------------------------------------------------------------------------------------------
// Generated sets.

std::vector<GeneratedArch> generate_arch_models(const SearchSpace& space, int count, uint64_t seed,
                                                const std::string& out_dir, const std::set<std::string>& exclude,
                                                Sampling sampling) {
  if (count < 0) throw Error("generate_arch_models: count must be >= 0, got " + std::to_string(count));
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec || !fs::is_directory(out_dir)) throw Error(out_dir + ": cannot create the output folder: " + ec.message());

  std::mt19937_64 rng(seed);
  std::set<std::string> seen;
  std::vector<GeneratedArch> out;
  // Repeats and excluded draws are skipped; a space this many draws cannot fill is too small.
  const int64_t max_draws = 1000 + 100 * static_cast<int64_t>(count);
  for (int64_t draws = 0; static_cast<int>(out.size()) < count; ++draws) {
    if (draws >= max_draws) {
      throw Error("generate_arch_models: only " + std::to_string(out.size()) + " distinct architectures (of " +
                  std::to_string(count) + " asked) after " + std::to_string(max_draws) + " draws; the space" +
                  (space.source.empty() ? "" : " " + space.source) + " is too small");
    }
    const Arch a = sampling == Sampling::kUniform ? sample_arch(space, rng) : sample_arch_sized(space, unit(rng), rng);
    const uint64_t weight_seed = rng();
    const std::string key = a.to_string();
    if (exclude.count(key) || !seen.insert(key).second) continue;

    GeneratedArch gen;
    gen.arch = a;
    gen.path = (fs::path(out_dir) / ("arch_" + std::to_string(out.size()) + ".xnn")).string();
    const std::shared_ptr<Model> model = build_arch_model(space, a, weight_seed, 1);
    gen.macs = estimate_graph_cost(model->graph).total.macs;
    gen.params = model->graph.parameter_count();
    const std::string bytes = serialize_xnn(*model);
    std::error_code size_ec;
    const bool same = fs::is_regular_file(gen.path) && fs::file_size(gen.path, size_ec) == bytes.size() &&
                      read_file(gen.path) == bytes;
    if (!same) {
      file_io::write_file_atomically(gen.path, 0644, [&](int fd, const std::string& tmp) {
        file_io::write_all(fd, bytes.data(), bytes.size(), tmp);
      });
    }
    out.push_back(std::move(gen));
  }
  return out;
}

}  // namespace xnn::arch
