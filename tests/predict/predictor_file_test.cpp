#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "engine/core/error.h"
#include "engine/core/json.h"
#include "harness/predict/latency_predictor.h"
#include "synthetic_ops.h"

namespace xnn::predict {
namespace {

namespace fs = std::filesystem;

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("xnn_predict_test_" + std::to_string(::getpid()) + "_" + name)).string();
}

TEST(PredictorFile, RoundTripGivesIdenticalPredictions) {
  const auto train = testing::synthetic_models(40, 25, 7, 0.05, 1.1, 0.05);
  LatencyPredictor p = LatencyPredictor::fit(train, PredictorFitOptions{});
  p.info().target_name = "cpu-t1";
  p.info().target_kind = "cpu";
  p.info().threads = 1;
  const std::string path = temp_path("roundtrip/cpu-t1.json");  // parent folder created by save
  p.save(path);
  const LatencyPredictor q = LatencyPredictor::load(path);
  EXPECT_EQ(q.info().target_name, "cpu-t1");
  EXPECT_EQ(q.info().models, p.info().models);
  EXPECT_EQ(q.info().kernel_models, p.info().kernel_models);
  EXPECT_EQ(q.overhead_ms(), p.overhead_ms());
  EXPECT_EQ(q.scale(), p.scale());
  for (const auto& m : testing::synthetic_models(10, 25, 8)) {
    const auto ops = testing::features_of(m);
    const Prediction a = p.predict(ops), b = q.predict(ops);
    EXPECT_EQ(a.latency_ms, b.latency_ms);  // bit for bit
    EXPECT_EQ(a.uncertainty_ms, b.uncertainty_ms);
    for (size_t i = 0; i < ops.size(); ++i) EXPECT_EQ(a.ops[i].time_ms, b.ops[i].time_ms);
  }
  EXPECT_EQ(q.to_json(), p.to_json());
  fs::remove_all(fs::path(path).parent_path());
}

void expect_load_error(const std::string& text, const std::string& part) {
  const std::string path = temp_path("bad.json");
  {
    std::ofstream f(path);
    f << text;
  }
  try {
    LatencyPredictor::load(path);
    ADD_FAILURE() << "no error for " << text.substr(0, 80);
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find(part), std::string::npos) << msg;
  }
  fs::remove(path);
}

TEST(PredictorFile, BadFilesAreErrorsNamingFileLineAndKey) {
  expect_load_error("{\"format\": \"something-else\"}", "\"format\"");
  expect_load_error("[1, 2", "JSON error");
  expect_load_error("{\n\"format\": \"xnn-lab-latency-predictor\",\n\"version\": 1,\n\"features\": [\"x\"]\n}",
                    ":4: \"features\"");
  // A valid predictor with one key removed.
  const auto train = testing::synthetic_models(20, 10, 9);
  std::string text = LatencyPredictor::fit(train, PredictorFitOptions{}).to_json();
  const size_t at = text.find("\"model_level\"");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, std::string("\"model_level\"").size(), "\"model_levels\"");
  expect_load_error(text, "missing key \"model_level\"");
  try {
    LatencyPredictor::load(temp_path("does-not-exist.json"));
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("xnn-lab calibrate"), std::string::npos) << e.what();
  }
}

TEST(JsonValue, ParsesValuesAndReportsLines) {
  const json::Value v = json::parse("{\"a\": [1, -2.5e3, true, null],\n \"s\": \"x\\n\\u00e9\"}", "t.json");
  const auto& a = v.at("a").list("a");
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(a[1].number("a[1]"), -2500);
  EXPECT_TRUE(a[2].flag("a[2]"));
  EXPECT_TRUE(a[3].is_null());
  EXPECT_EQ(v.at("s").text("s"), "x\n\xc3\xa9");
  EXPECT_EQ(v.line(), 1);
  EXPECT_EQ(v.at("s").line(), 2);
  EXPECT_EQ(v.find("missing"), nullptr);
  try {
    v.at("s").number("\"s\"");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "2: \"s\": expected a number");
  }
  try {
    v.at("nope");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "1: missing key \"nope\": expected it in this object");
  }
  EXPECT_THROW(json::parse("{\"a\": 1,}", "t.json"), Error);
  EXPECT_THROW(json::parse("{\"a\": 1} x", "t.json"), Error);
  EXPECT_THROW(json::parse("\"open", "t.json"), Error);
}

}  // namespace
}  // namespace xnn::predict
