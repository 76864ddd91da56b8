// Training config parsing (harness/train/trainer.h): sections may be left out or left empty and
// take their defaults; a section that is not a mapping is an error naming the file and line.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "engine/core/error.h"
#include "harness/train/trainer.h"

namespace xnn::train {
namespace {

const char* kBuilder = R"(
model:
  builder:
    input: [1, 28, 28]
    blocks: [{type: flatten}]
)";

TEST(TrainConfig, MissingOrEmptySectionsTakeTheirDefaults) {
  const TrainConfig a = parse_train_config(YAML::Load(std::string(kBuilder) + "epochs: 2\n"), "a.yaml");
  EXPECT_EQ(a.epochs, 2);
  EXPECT_EQ(a.batch_size, 128);
  EXPECT_EQ(a.augment.pad_crop, 0);
  const TrainConfig b = parse_train_config(YAML::Load(std::string(kBuilder) + "data:\noptimizer:\n"), "b.yaml");
  EXPECT_EQ(b.batch_size, 128);
  EXPECT_FLOAT_EQ(b.mean, a.mean);
}

TEST(TrainConfig, ASectionThatIsNotAMappingNamesFileAndLine) {
  try {
    parse_train_config(YAML::Load(std::string(kBuilder) + "data: 3\n"), "c.yaml");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("c.yaml:6"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'data' must be a mapping"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace xnn::train
