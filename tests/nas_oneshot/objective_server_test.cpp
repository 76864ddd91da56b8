// The one-shot objective served over its line protocol (nas/oneshot/objective_server.h), on the
// CI config with a latency stand-in (the model file's size): the ready line describes the
// space, an evaluation scores a subnet and a repeat comes from the cache with the same values,
// our strategy runs as a search of N trials, and bad requests are error lines, not exits.
#include "nas/oneshot/objective_server.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <sstream>

#include "nas/oneshot/subnet_objective.h"

namespace fs = std::filesystem;
using namespace xnn;
using namespace xnn::nas;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The text between `"key":` and the next ',' or '}' at depth 0 of a flat field, e.g. "values".
std::string field(const std::string& line, const std::string& key) {
  const size_t at = line.find("\"" + key + "\":");
  if (at == std::string::npos) return "";
  size_t i = at + key.size() + 3, depth = 0, j = i;
  for (; j < line.size(); ++j) {
    if (line[j] == '[' || line[j] == '{') ++depth;
    if ((line[j] == ']' || line[j] == '}') && depth > 0) --depth;
    else if ((line[j] == ',' || line[j] == '}') && depth == 0) break;
  }
  return line.substr(i, j - i);
}

}  // namespace

TEST(ObjectiveServer, ScoresCachesSearchesAndReportsBadRequests) {
  const fs::path dir = fs::temp_directory_path() / ("objective_server_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const NasConfig config = load_nas_config(std::string(XNN_SOURCE_DIR) + "/configs/nas/fmnist_oneshot_ci.yaml",
                                           {"output.dir=" + (dir / "out").string(), "objectives=[top1]"});
  int latency_calls = 0;
  const LatencyFn latency = [&](const std::string& path) {
    ++latency_calls;
    return static_cast<double>(fs::file_size(path)) / 1e5;
  };
  const size_t n = make_search_space(SubnetObjective(config, latency, nullptr).search_config()).size();
  ASSERT_GT(n, 3u);
  std::string zeros;
  for (size_t i = 0; i < n; ++i) zeros += " 0";

  std::istringstream in("evaluate" + zeros + "\nevaluate" + zeros + "\nsearch random 3 4\nevaluate 0\nevaluate" + zeros +
                        " 0\nsearch nosuch 0 2\nbogus\nquit\nevaluate" + zeros + "\n");
  std::ostringstream out;
  latency_calls = 0;
  serve_subnet_objective(config, latency, in, out, nullptr);
  const std::vector<std::string> l = lines_of(out.str());
  ASSERT_EQ(l.size(), 1u + 2u + 5u + 4u) << out.str();  // ready, 2 evaluations, 4 trials + done, 4 errors; none after quit

  EXPECT_TRUE(has(l[0], "\"ready\":true")) << l[0];
  EXPECT_TRUE(has(l[0], "\"directions\":[\"maximize\"]")) << l[0];
  EXPECT_TRUE(has(l[0], "\"constraints\":[\"params\"]")) << l[0];
  EXPECT_TRUE(has(l[0], "\"stem_stride\"")) << l[0];  // the CI space's stem stride is a decision

  EXPECT_EQ(field(l[1], "cached"), "false") << out.str();
  EXPECT_EQ(field(l[2], "cached"), "true") << out.str();
  EXPECT_EQ(field(l[1], "values"), field(l[2], "values"));
  EXPECT_EQ(field(l[1], "arch"), field(l[2], "arch"));
  EXPECT_EQ(field(l[1], "feasible"), "true");
  const double top1 = std::stod(field(l[1], "values").substr(1));
  EXPECT_GE(top1, 0.0);
  EXPECT_LE(top1, 1.0);

  for (int t = 0; t < 4; ++t) EXPECT_EQ(field(l[3 + t], "trial"), std::to_string(t)) << l[3 + t];
  EXPECT_EQ(l[7], "{\"done\":true}");
  // One latency measurement per distinct subnet: the cache answers repeats.
  std::set<std::string> distinct;
  for (int i : {1, 3, 4, 5, 6}) distinct.insert(field(l[i], "arch"));
  EXPECT_EQ(latency_calls, static_cast<int>(distinct.size()));

  EXPECT_TRUE(has(l[8], "\"error\"") && has(l[8], "1 values for")) << l[8];
  EXPECT_TRUE(has(l[9], "\"error\"") && has(l[9], "values for")) << l[9];
  EXPECT_TRUE(has(l[10], "\"error\"") && has(l[10], "nosuch")) << l[10];
  EXPECT_TRUE(has(l[11], "\"error\"") && has(l[11], "unknown request 'bogus'")) << l[11];
  fs::remove_all(dir);
}
