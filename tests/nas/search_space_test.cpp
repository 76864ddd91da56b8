#include "nas/search/search_space.h"

#include <gtest/gtest.h>

#include <cmath>

#include "engine/core/error.h"

namespace xnn::nas {
namespace {

SearchSpace mixed_space() {
  SearchSpace s;
  s.add_float("lr", 1e-4, 1e-1, true)
      .add_float("dropout", 0.0, 0.5)
      .add_int("epochs", 1, 20)
      .add_int("batch", 16, 128, 16)
      .add_int("width", 8, 512, 1, true)
      .add_categorical("act", {std::string("relu"), std::string("hardswish")})
      .add_categorical("kernel", {int64_t{3}, int64_t{5}, int64_t{7}})
      .add_categorical("mult", {0.5, 0.75, 1.0});
  return s;
}

TEST(SearchSpace, RejectsBadDefinitionsNamingTheParameter) {
  SearchSpace s;
  s.add_float("x", 0, 1);
  auto message = [](auto fn) {
    try {
      fn();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([&] { s.add_float("x", 0, 1); }).find("'x' is defined twice"), std::string::npos);
  EXPECT_NE(message([&] { s.add_float("y", 2, 1); }).find("'y': expected finite low <= high"), std::string::npos);
  EXPECT_NE(message([&] { s.add_float("y", 0, 1, true); }).find("log range needs low > 0"), std::string::npos);
  EXPECT_NE(message([&] { s.add_int("n", 0, 10, 0); }).find("step must be >= 1"), std::string::npos);
  EXPECT_NE(message([&] { s.add_int("n", 0, 10, 1, true); }).find("log int range needs low >= 1"), std::string::npos);
  EXPECT_NE(message([&] { s.add_categorical("c", {}); }).find("at least one choice"), std::string::npos);
  EXPECT_NE(message([&] { s.add_categorical("c", {int64_t{3}, 3.0}); }).find("choice '3' appears twice"),
            std::string::npos);
  EXPECT_NE(message([&] { s.add_float("", 0, 1); }).find("name is empty"), std::string::npos);
  EXPECT_THROW(s.index_of("nope"), Error);
}

TEST(SearchSpace, SamplesStayInTheirDistributions) {
  SearchSpace s = mixed_space();
  std::mt19937_64 rng(1);
  int small_lr = 0;
  for (int i = 0; i < 2000; ++i) {
    TrialParams p = s.sample(rng);
    std::string why;
    ASSERT_TRUE(s.contains(p, &why)) << why;
    double lr = std::get<double>(p.at("lr"));
    if (lr < 1e-2) ++small_lr;  // log-uniform: 2/3 of the mass below 1e-2
    EXPECT_EQ((std::get<int64_t>(p.at("batch")) - 16) % 16, 0);
  }
  EXPECT_GT(small_lr, 1200);
  EXPECT_LT(small_lr, 1460);
}

TEST(SearchSpace, EncodeDecodeRoundTripsAndRejectsValuesOutsideTheSpace) {
  SearchSpace s = mixed_space();
  std::mt19937_64 rng(7);
  for (int i = 0; i < 100; ++i) {
    TrialParams p = s.sample(rng);
    EXPECT_EQ(s.decode(s.encode(p)), p);
  }
  TrialParams p = s.sample(rng);
  EXPECT_EQ(s.to_internal(s.index_of("act"), std::string("hardswish")), 1.0);
  EXPECT_EQ(s.to_internal(s.index_of("kernel"), 7.0), 2.0);  // 7.0 names the int choice 7
  EXPECT_EQ(s.from_internal(s.index_of("batch"), 39.0), ParamValue(int64_t{32}));
  std::string why;
  p["batch"] = int64_t{20};
  EXPECT_FALSE(s.contains(p, &why));
  EXPECT_NE(why.find("not on the step 16"), std::string::npos) << why;
  p["batch"] = int64_t{32};
  p["act"] = std::string("gelu");
  EXPECT_FALSE(s.contains(p, &why));
  EXPECT_NE(why.find("'act': value 'gelu' is not one of the choices"), std::string::npos) << why;
  p.erase("act");
  EXPECT_FALSE(s.contains(p, &why));
  EXPECT_NE(why.find("'act' is missing"), std::string::npos);
  p["act"] = std::string("relu");
  p["extra"] = 1.0;
  EXPECT_FALSE(s.contains(p, &why));
  EXPECT_NE(why.find("unknown parameter 'extra'"), std::string::npos);
  EXPECT_THROW(s.encode(p), Error);
}

TEST(SearchSpace, JsonDescribesEveryParameterInOrder) {
  SearchSpace s;
  s.add_float("lr", 0.001, 0.1, true).add_int("n", 1, 9, 2).add_categorical("act", {std::string("relu"), 0.5});
  EXPECT_EQ(s.to_json(),
            "{\"lr\":{\"type\":\"float\",\"low\":0.001,\"high\":0.1,\"log\":true},"
            "\"n\":{\"type\":\"int\",\"low\":1,\"high\":9,\"step\":2,\"log\":false},"
            "\"act\":{\"type\":\"categorical\",\"choices\":[\"relu\",0.5]}}");
  EXPECT_EQ(param_value_text(0.1), "0.1");
  EXPECT_EQ(param_value_text(int64_t{-3}), "-3");
}

TEST(SearchSpace, DerivedGeneratorsDependOnlyOnSeedAndIndex) {
  auto a = derive_rng(42, 7), b = derive_rng(42, 7), c = derive_rng(42, 8), d = derive_rng(43, 7);
  uint64_t x = a();
  EXPECT_EQ(x, b());
  EXPECT_NE(x, c());
  EXPECT_NE(x, d());
}

}  // namespace
}  // namespace xnn::nas
