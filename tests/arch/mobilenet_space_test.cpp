// The architecture space itself: YAML parsing and its errors, sampling, the string encoding,
// JSON, membership and mutation (harness/arch/mobilenet_space.h).
#include "harness/arch/mobilenet_space.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

#include "engine/core/error.h"

namespace xnn::arch {
namespace {

const std::string kSourceDir = XNN_SOURCE_DIR;
std::string default_space_path() { return kSourceDir + "/configs/arch/mobilenet_space.yaml"; }
std::string tiny_space_path() { return kSourceDir + "/configs/arch/mobilenet_space_tiny.yaml"; }

const char* kMinimal = R"(input: [3, 32, 32]
classes: 10
stages:
  - {depths: [1, 2], channels: 16, stride: 2}
)";

// The message of the Error that parsing `yaml` (as file "space.yaml") throws.
std::string parse_error(const std::string& yaml) {
  try {
    parse_search_space(YAML::Load(yaml), "space.yaml");
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for:\n" << yaml;
  return "";
}

TEST(ArchSpaceParse, ShippedSpacesLoad) {
  const SearchSpace s = load_search_space(default_space_path());
  EXPECT_EQ(s.in_channels, 3);
  EXPECT_EQ(s.resolutions, (std::vector<int64_t>{96, 128, 160, 192, 224}));
  EXPECT_EQ(s.width_multipliers, (std::vector<double>{0.35, 0.5, 0.75, 1.0}));
  EXPECT_EQ(s.classes, 1000);
  ASSERT_EQ(s.stages.size(), 6u);
  EXPECT_EQ(s.stages[0].expansions, (std::vector<int64_t>{1}));         // overridden
  EXPECT_EQ(s.stages[1].kernels, (std::vector<int64_t>{3, 5, 7}));     // from block_choices
  EXPECT_EQ(s.stages[1].expansions, (std::vector<int64_t>{1, 3, 6}));
  EXPECT_EQ(s.stages[1].se, (std::vector<bool>{false, true}));
  EXPECT_EQ(s.stages[3].depths, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(s.source, default_space_path());

  const SearchSpace t = load_search_space(tiny_space_path());
  EXPECT_EQ(t.in_channels, 1);
  EXPECT_EQ(t.classes, 10);
}

TEST(ArchSpaceParse, DefaultsWhenOptionalKeysAreLeftOut) {
  const SearchSpace s = parse_search_space(YAML::Load(kMinimal), "space.yaml");
  EXPECT_EQ(s.resolutions, (std::vector<int64_t>{32}));
  EXPECT_EQ(s.width_multipliers, (std::vector<double>{1.0}));
  EXPECT_EQ(s.channel_divisor, 8);
  EXPECT_EQ(s.stem_channels, 16);
  EXPECT_EQ(s.stem_stride, 2);
  EXPECT_EQ(s.head_channels, 1280);
  ASSERT_EQ(s.stages.size(), 1u);
  EXPECT_EQ(s.stages[0].stride, 2);
  // MobileNetV2's block: 3x3, expansion 6, no SE, relu6.
  EXPECT_EQ(s.stages[0].kernels, (std::vector<int64_t>{3}));
  EXPECT_EQ(s.stages[0].expansions, (std::vector<int64_t>{6}));
  EXPECT_EQ(s.stages[0].se, (std::vector<bool>{false}));
  EXPECT_EQ(s.stages[0].activations, (std::vector<std::string>{"relu6"}));
}

TEST(ArchSpaceParse, UnknownTopLevelKeyNamesFileLineAndKey) {
  const std::string msg = parse_error(std::string(kMinimal) + "widths: [0.5]\n");
  EXPECT_NE(msg.find("space.yaml:5:1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'widths'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("width_multipliers"), std::string::npos) << msg;  // the expected keys
}

TEST(ArchSpaceParse, BadStageValuesNameTheKeyAndLine) {
  std::string msg = parse_error("input: [3, 32, 32]\nstages:\n  - {depths: [1], channels: 16, kernels: [3, 4]}\n");
  EXPECT_NE(msg.find("space.yaml:3:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'stages[0].kernels'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("odd positive integers"), std::string::npos) << msg;

  msg = parse_error("input: [3, 32, 32]\nstages:\n  - {depths: [1], channels: 16}\n  - {channels: 24}\n");
  EXPECT_NE(msg.find("space.yaml:4:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'stages[1].depths' is missing"), std::string::npos) << msg;

  msg = parse_error("input: [3, 32, 32]\nstages:\n  - {depths: [1], channels: sixteen}\n");
  EXPECT_NE(msg.find("'stages[0].channels' must be a positive integer"), std::string::npos) << msg;

  msg = parse_error("input: [3, 32, 32]\nstages:\n  - {depths: [1], channels: 16, stride: 3}\n");
  EXPECT_NE(msg.find("'stages[0].stride' must be 1 or 2"), std::string::npos) << msg;

  msg = parse_error("input: [3, 32, 32]\nstages:\n  - {depths: [1], channels: 16, colour: red}\n");
  EXPECT_NE(msg.find("unknown key 'stages[0].colour'"), std::string::npos) << msg;

  msg = parse_error("input: [3, 32, 32]\nstages:\n  - {depths: [1, 1], channels: 16}\n");
  EXPECT_NE(msg.find("lists a choice twice"), std::string::npos) << msg;
}

TEST(ArchSpaceParse, BadTopLevelValues) {
  std::string msg = parse_error("input: [3, 32]\nstages:\n  - {depths: [1], channels: 16}\n");
  EXPECT_NE(msg.find("space.yaml:1:8"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'input' must be [C, H, W]"), std::string::npos) << msg;

  msg = parse_error("input: [3, 32, 48]\nstages:\n  - {depths: [1], channels: 16}\n");
  EXPECT_NE(msg.find("must be square"), std::string::npos) << msg;

  msg = parse_error(std::string(kMinimal) + "block_choices: {activations: [relu, gelu]}\n");
  EXPECT_NE(msg.find("space.yaml:5:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'block_choices.activations'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("hardswish"), std::string::npos) << msg;  // the supported names

  msg = parse_error(std::string(kMinimal) + "width_multipliers: [0.5, -1]\n");
  EXPECT_NE(msg.find("'width_multipliers'"), std::string::npos) << msg;

  msg = parse_error(std::string(kMinimal) + "stem: {channels: 16, activation: tanh}\n");
  EXPECT_NE(msg.find("'stem.activation' is 'tanh'"), std::string::npos) << msg;

  msg = parse_error(std::string(kMinimal) + "head: {channels: 0}\n");
  EXPECT_NE(msg.find("'head.channels' must be a positive integer"), std::string::npos) << msg;

  msg = parse_error(std::string(kMinimal) + "resolutions:\n");
  EXPECT_NE(msg.find("'resolutions' must be a non-empty list"), std::string::npos) << msg;

  msg = parse_error("input: [3, 32, 32]\nstages: []\n");
  EXPECT_NE(msg.find("'stages' must be a non-empty list"), std::string::npos) << msg;
}

TEST(ArchSpaceParse, FileErrorsNameTheFile) {
  try {
    load_search_space("/nonexistent/space.yaml");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/space.yaml"), std::string::npos) << e.what();
  }
  const std::string path = (std::filesystem::temp_directory_path() / ("arch_bad_space_" + std::to_string(::getpid()) + ".yaml")).string();
  std::ofstream(path) << "input: [3, 32, 32\nstages: {\n";
  try {
    load_search_space(path);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path + ":"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("invalid YAML"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

TEST(ArchSpace, MakeDivisibleFollowsMobileNetV2) {
  EXPECT_EQ(make_divisible(32 * 0.35, 8), 16);   // 11.2 -> 8 would lose > 10%: 16
  EXPECT_EQ(make_divisible(16 * 0.35, 8), 8);    // never below the divisor
  EXPECT_EQ(make_divisible(24 * 0.75, 8), 24);   // 18 -> 16 loses > 10%: 24
  EXPECT_EQ(make_divisible(40 * 0.5, 8), 24);    // 20 rounds half up to 24
  EXPECT_EQ(make_divisible(1280, 8), 1280);
  EXPECT_EQ(make_divisible(100, 1), 100);

  const SearchSpace s = load_search_space(default_space_path());
  EXPECT_EQ(stem_channels(s, 0.35), 8);
  EXPECT_EQ(stem_channels(s, 1.0), 16);
  EXPECT_EQ(stage_channels(s, 2, 0.5), 24);    // 40 * 0.5
  EXPECT_EQ(stage_channels(s, 5, 0.75), 120);  // 160 * 0.75
  EXPECT_EQ(head_channels(s, 0.35), 1280);     // the head never narrows (MobileNetV2)
  EXPECT_EQ(head_channels(s, 1.0), 1280);
}

TEST(ArchSpace, SampleIsDeterministicPerSeedAndInSpace) {
  const SearchSpace s = load_search_space(default_space_path());
  std::mt19937_64 a(42), b(42), c(43);
  std::set<std::string> seen;
  for (int i = 0; i < 50; ++i) {
    const Arch x = sample_arch(s, a);
    EXPECT_EQ(x, sample_arch(s, b));
    std::string why;
    EXPECT_TRUE(arch_in_space(s, x, &why)) << why;
    seen.insert(x.to_string());
  }
  EXPECT_EQ(seen.size(), 50u);  // a space of ~1e30 architectures does not repeat in 50 draws
  std::mt19937_64 a2(42);
  EXPECT_NE(sample_arch(s, a2), sample_arch(s, c));
}

TEST(ArchSpace, SamplesCoverEveryChoice) {
  const SearchSpace s = load_search_space(default_space_path());
  std::mt19937_64 rng(7);
  std::set<int64_t> res, kernels, expansions, depths3;
  std::set<double> widths;
  std::set<std::string> acts;
  std::set<bool> se;
  for (int i = 0; i < 200; ++i) {
    const Arch a = sample_arch(s, rng);
    res.insert(a.resolution);
    widths.insert(a.width);
    depths3.insert(static_cast<int64_t>(a.stages[3].size()));
    for (const auto& b : a.stages[1]) {
      kernels.insert(b.kernel);
      expansions.insert(b.expansion);
      se.insert(b.se);
      acts.insert(b.activation);
    }
    for (const auto& b : a.stages[0]) EXPECT_EQ(b.expansion, 1);
  }
  EXPECT_EQ(res.size(), 5u);
  EXPECT_EQ(widths.size(), 4u);
  EXPECT_EQ(depths3.size(), 3u);
  EXPECT_EQ(kernels.size(), 3u);
  EXPECT_EQ(expansions.size(), 3u);
  EXPECT_EQ(se.size(), 2u);
  EXPECT_EQ(acts.size(), 4u);
}

// Mean of a per-architecture measure over `n` sized draws.
template <typename F>
double mean_over_sized(const SearchSpace& s, double size, int n, F measure) {
  std::mt19937_64 rng(21);
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    const Arch a = sample_arch_sized(s, size, rng);
    std::string why;
    EXPECT_TRUE(arch_in_space(s, a, &why)) << why;
    sum += measure(a);
  }
  return sum / n;
}

TEST(ArchSpace, SizedSamplesLeanToTheCheapOrCostlyCorner) {
  const SearchSpace s = load_search_space(default_space_path());
  const auto resolution = [](const Arch& a) { return static_cast<double>(a.resolution); };
  const auto blocks = [](const Arch& a) {
    double n = 0;
    for (const auto& st : a.stages) n += static_cast<double>(st.size());
    return n;
  };
  const auto kernel_area = [](const Arch& a) {
    double n = 0, k = 0;
    for (const auto& st : a.stages)
      for (const auto& b : st) n += 1, k += static_cast<double>(b.kernel * b.kernel * b.expansion);
    return k / n;
  };
  for (const auto& measure : {std::function<double(const Arch&)>(resolution), std::function<double(const Arch&)>(blocks),
                              std::function<double(const Arch&)>(kernel_area)}) {
    const double low = mean_over_sized(s, 0.0, 100, measure);
    const double mid = mean_over_sized(s, 0.5, 100, measure);
    const double high = mean_over_sized(s, 1.0, 100, measure);
    EXPECT_LT(low, mid);
    EXPECT_LT(mid, high);
  }
  // Size 0 draws the smallest choice most often (weights 1, .71, .25, .04, .004 over the five
  // resolutions: 96 half the time) and the largest almost never.
  std::mt19937_64 rng(22);
  int smallest = 0, largest = 0;
  for (int i = 0; i < 200; ++i) {
    const int64_t r = sample_arch_sized(s, 0.0, rng).resolution;
    smallest += r == 96;
    largest += r == 224;
  }
  EXPECT_GT(smallest, 70);
  EXPECT_LT(largest, 5);
  EXPECT_THROW(sample_arch_sized(s, 1.5, rng), Error);
  EXPECT_THROW(sample_arch_sized(s, -0.1, rng), Error);
}

TEST(ArchEncoding, KnownStringAndRoundTrip) {
  Arch a;
  a.resolution = 160;
  a.width = 0.75;
  a.stages = {{{3, 1, false, "relu"}}, {{5, 3, true, "hardswish"}, {7, 6, false, "relu6"}}, {{3, 6, true, "silu"}}};
  EXPECT_EQ(a.to_string(), "r160-w0.75|k3e1.relu|k5e3se.hardswish-k7e6.relu6|k3e6se.silu");
  EXPECT_EQ(parse_arch(a.to_string()), a);

  const SearchSpace s = load_search_space(default_space_path());
  std::mt19937_64 rng(3);
  for (int i = 0; i < 100; ++i) {
    const Arch x = sample_arch(s, rng);
    const Arch y = parse_arch(x.to_string());
    EXPECT_EQ(y, x) << x.to_string();
    EXPECT_EQ(y.to_string(), x.to_string());
  }
}

TEST(ArchEncoding, MalformedStringsAreErrorsQuotingThePart) {
  for (const std::string bad : {"", "r160", "r160-w0.75", "x160-w1|k3e1.relu", "r0-w1|k3e1.relu", "r160-wx|k3e1.relu",
                                "r160-w1|k3e1", "r160-w1|k3.relu", "r160-w1|k3e1.gelu", "r160-w1|k3e1.relu-",
                                "r160-w1|", "r160-w1|kxe1.relu", "r160-w1|k3e0.relu"}) {
    try {
      parse_arch(bad);
      ADD_FAILURE() << "no error for '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("architecture '" + bad + "'"), std::string::npos) << e.what();
    }
  }
}

TEST(ArchEncoding, Json) {
  Arch a;
  a.resolution = 96;
  a.width = 0.5;
  a.stages = {{{3, 1, false, "relu"}}, {{5, 3, true, "hardswish"}}};
  EXPECT_EQ(arch_to_json(a),
            "{\"encoding\":\"r96-w0.5|k3e1.relu|k5e3se.hardswish\",\"resolution\":96,\"width\":0.5,\"stages\":"
            "[[{\"kernel\":3,\"expansion\":1,\"se\":false,\"activation\":\"relu\"}],"
            "[{\"kernel\":5,\"expansion\":3,\"se\":true,\"activation\":\"hardswish\"}]]}");
}

TEST(ArchSpace, MembershipNamesTheOffendingDecision) {
  const SearchSpace s = load_search_space(tiny_space_path());
  std::mt19937_64 rng(1);
  const Arch ok = sample_arch(s, rng);
  std::string why;
  ASSERT_TRUE(arch_in_space(s, ok, &why)) << why;

  Arch bad = ok;
  bad.resolution = 30;
  EXPECT_FALSE(arch_in_space(s, bad, &why));
  EXPECT_NE(why.find("resolution 30"), std::string::npos) << why;

  bad = ok;
  bad.width = 0.75;
  EXPECT_FALSE(arch_in_space(s, bad, &why));
  EXPECT_NE(why.find("width 0.75"), std::string::npos) << why;

  bad = ok;
  bad.stages[1].assign(3, ok.stages[1][0]);
  EXPECT_FALSE(arch_in_space(s, bad, &why));
  EXPECT_NE(why.find("stage 1: depth 3"), std::string::npos) << why;

  bad = ok;
  bad.stages[2][0].kernel = 7;
  EXPECT_FALSE(arch_in_space(s, bad, &why));
  EXPECT_NE(why.find("stage 2 block 0: kernel 7"), std::string::npos) << why;

  bad = ok;
  bad.stages[0][0].expansion = 6;
  EXPECT_FALSE(arch_in_space(s, bad, &why));
  EXPECT_NE(why.find("expansion 6"), std::string::npos) << why;

  bad = ok;
  bad.stages.pop_back();
  EXPECT_FALSE(arch_in_space(s, bad, &why));
  EXPECT_NE(why.find("2 stages"), std::string::npos) << why;
}

// Number of decisions that differ (a depth change counts once, its blocks not compared).
int differences(const Arch& a, const Arch& b) {
  int n = (a.resolution != b.resolution) + (a.width != b.width);
  for (size_t s = 0; s < a.stages.size(); ++s) {
    if (a.stages[s].size() != b.stages[s].size()) {
      ++n;
      continue;
    }
    for (size_t i = 0; i < a.stages[s].size(); ++i) {
      const BlockChoice &x = a.stages[s][i], &y = b.stages[s][i];
      n += (x.kernel != y.kernel) + (x.expansion != y.expansion) + (x.se != y.se) + (x.activation != y.activation);
    }
  }
  return n;
}

TEST(ArchMutate, ChangesAtLeastOneDecisionAndStaysInSpace) {
  for (const std::string& path : {default_space_path(), tiny_space_path()}) {
    const SearchSpace s = load_search_space(path);
    std::mt19937_64 rng(11);
    for (double prob : {0.0, 0.05, 0.3, 1.0}) {
      for (int i = 0; i < 50; ++i) {
        const Arch a = sample_arch(s, rng);
        const Arch m = mutate_arch(s, a, rng, prob);
        std::string why;
        EXPECT_TRUE(arch_in_space(s, m, &why)) << why;
        EXPECT_GE(differences(a, m), 1) << a.to_string();
        if (prob == 0.0) {
          EXPECT_EQ(differences(a, m), 1) << a.to_string() << " -> " << m.to_string();
        }
      }
    }
  }
}

TEST(ArchMutate, ProbabilityOneChangesEveryTopLevelDecision) {
  const SearchSpace s = load_search_space(default_space_path());
  std::mt19937_64 rng(5);
  for (int i = 0; i < 20; ++i) {
    const Arch a = sample_arch(s, rng);
    const Arch m = mutate_arch(s, a, rng, 1.0);
    EXPECT_NE(m.resolution, a.resolution);
    EXPECT_NE(m.width, a.width);
    for (size_t st = 1; st < s.stages.size(); ++st) EXPECT_NE(m.stages[st].size(), a.stages[st].size());
  }
}

TEST(ArchMutate, DeterministicPerSeed) {
  const SearchSpace s = load_search_space(default_space_path());
  std::mt19937_64 r0(9);
  const Arch a = sample_arch(s, r0);
  std::mt19937_64 r1(100), r2(100);
  EXPECT_EQ(mutate_arch(s, a, r1, 0.1), mutate_arch(s, a, r2, 0.1));
}

TEST(ArchMutate, RefusesSingleArchitectureSpacesAndForeignArchs) {
  const SearchSpace single = parse_search_space(
      YAML::Load("input: [3, 32, 32]\nstages:\n  - {depths: [1], channels: 16, stride: 2}\n"), "single.yaml");
  std::mt19937_64 rng(0);
  const Arch a = sample_arch(single, rng);
  EXPECT_THROW(mutate_arch(single, a, rng, 0.5), Error);

  const SearchSpace tiny = load_search_space(tiny_space_path());
  try {
    mutate_arch(tiny, a, rng, 0.5);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not in the space"), std::string::npos) << e.what();
  }
}

// `stem: {stride: [1, 2]}` makes the stem's stride a decision. The first entry is the default,
// which an architecture keeps implicit (0), so encodings written before the decision existed
// ("r28-w0.5|...") still mean the same network; the other stride is written "-s2".
TEST(ArchStemStride, ListMakesADecisionWithAnImplicitDefault) {
  const SearchSpace s = parse_search_space(YAML::Load(R"(input: [1, 28, 28]
classes: 10
stem: {channels: 16, stride: [1, 2]}
stages:
  - {depths: [1], channels: 16, stride: 2}
)"),
                                           "s.yaml");
  EXPECT_EQ(s.stem_stride, 1);
  EXPECT_EQ(s.stem_strides, (std::vector<int64_t>{1, 2}));
  const Arch base = parse_arch("r28-w1|k3e6.relu6");
  EXPECT_EQ(base.stem_stride, 0);
  EXPECT_EQ(stem_stride(s, base), 1);
  const Arch s2 = parse_arch("r28-w1-s2|k3e6.relu6");
  EXPECT_EQ(s2.stem_stride, 2);
  EXPECT_EQ(stem_stride(s, s2), 2);
  EXPECT_EQ(s2.to_string(), "r28-w1-s2|k3e6.relu6");
  EXPECT_TRUE(arch_in_space(s, s2));
  EXPECT_NE(arch_to_json(s2).find("\"stem_stride\":2"), std::string::npos);
  EXPECT_EQ(canonical_stem_stride(s, 1), 0);
  EXPECT_EQ(canonical_stem_stride(s, 2), 2);

  // Sampling draws both strides, always in canonical form; mutation flips it.
  std::mt19937_64 rng(5);
  std::set<int64_t> seen;
  for (int i = 0; i < 64; ++i) {
    const Arch a = sample_arch(s, rng);
    EXPECT_TRUE(a.stem_stride == 0 || a.stem_stride == 2) << a.to_string();
    seen.insert(stem_stride(s, a));
  }
  EXPECT_EQ(seen, (std::set<int64_t>{1, 2}));
  // The stem's stride is the space's only decision with two choices: every mutation flips it.
  for (int i = 0; i < 8; ++i) EXPECT_EQ(stem_stride(s, mutate_arch(s, base, rng, 0.5)), 2);
  // Sized draws rank stride 2 as the cheaper choice.
  int cheap_s2 = 0;
  for (int i = 0; i < 200; ++i) cheap_s2 += stem_stride(s, sample_arch_sized(s, 0.0, rng)) == 2;
  EXPECT_GT(cheap_s2, 120);

  // A fixed stem refuses a stride it does not have.
  const SearchSpace fixed = parse_search_space(YAML::Load(kMinimal), "m.yaml");
  std::string why;
  EXPECT_FALSE(arch_in_space(fixed, parse_arch("r32-w1-s1|k3e6.relu6"), &why));
  EXPECT_NE(why.find("stem stride 1 is not one of [2]"), std::string::npos) << why;
  EXPECT_TRUE(arch_in_space(fixed, parse_arch("r32-w1|k3e6.relu6")));
}

TEST(ArchStemStride, BadValuesAreErrors) {
  EXPECT_NE(parse_error("input: [1, 28, 28]\nstem: {stride: [1, 3]}\nstages:\n  - {depths: [1], channels: 8}\n")
                .find("space.yaml:2:20: 'stem.stride' must be a non-empty list of distinct strides, each 1 or 2"),
            std::string::npos);
  for (const std::string bad : {"r28-w1-s3|k3e1.relu", "r28-w1-x2|k3e1.relu", "r28-w1-s|k3e1.relu", "r28-w1-s2-s2|k3e1.relu"}) {
    EXPECT_THROW(parse_arch(bad), Error) << bad;
  }
}

}  // namespace
}  // namespace xnn::arch
