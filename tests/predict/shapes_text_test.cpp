#include "harness/predict/shapes_text.h"

#include <gtest/gtest.h>

#include "engine/core/error.h"

namespace xnn::predict {
namespace {

TEST(ShapesText, ParsesInputsOutputsAndAbsentOptionalInputs) {
  const OpShapes s = parse_shapes_text("[1,32,56,56];[64,32,1,1];[];[1,64,56,56]->[1,64,56,56]");
  ASSERT_EQ(s.inputs.size(), 4u);
  EXPECT_EQ(s.inputs[0], (Shape{1, 32, 56, 56}));
  EXPECT_EQ(s.inputs[1], (Shape{64, 32, 1, 1}));
  EXPECT_TRUE(s.inputs[2].empty());
  ASSERT_EQ(s.outputs.size(), 1u);
  EXPECT_EQ(s.outputs[0], (Shape{1, 64, 56, 56}));
}

TEST(ShapesText, NoInputsAndSeveralOutputs) {
  const OpShapes s = parse_shapes_text("->[2];[3,4]");
  EXPECT_TRUE(s.inputs.empty());
  ASSERT_EQ(s.outputs.size(), 2u);
  EXPECT_EQ(s.outputs[1], (Shape{3, 4}));
}

TEST(ShapesText, RoundTripsWithTheWriter) {
  const std::vector<Shape> in = {{1, 3, 224, 224}, {}, {16, 3, 3, 3}}, out = {{1, 16, 112, 112}};
  const std::string text = shapes_text(in, out);
  EXPECT_EQ(text, "[1,3,224,224];[];[16,3,3,3]->[1,16,112,112]");
  const OpShapes s = parse_shapes_text(text);
  EXPECT_EQ(s.inputs, in);
  EXPECT_EQ(s.outputs, out);
}

void expect_error(const std::string& text, const std::string& part) {
  try {
    parse_shapes_text(text);
    FAIL() << "no error for \"" << text << "\"";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(part), std::string::npos) << msg;
    EXPECT_NE(msg.find("\"" + text + "\""), std::string::npos) << "message should quote the text: " << msg;
  }
}

TEST(ShapesText, MalformedTextIsAnErrorNamingTheProblem) {
  expect_error("", "expected '-'");
  expect_error("[1,2]", "expected '-', found the end");
  expect_error("[1,2]->", "no output shape");
  expect_error("[1,2->[3]", "expected ','");
  expect_error("[1,x]->[3]", "non-negative integer");
  expect_error("[1,-2]->[3]", "non-negative integer");
  expect_error("[1,2]->[3] ", "after the output shapes");
  expect_error("[1,2]->[3", "unterminated shape");
  expect_error("1x3x224x224->1x16x112x112", "expected '['");
}

}  // namespace
}  // namespace xnn::predict
