// Tensor/shape ops, data movement, Resize/Upsample and reductions, run one node at a time
// through run_node with the built-in registry. Expected values are hand-checked or computed
// with numpy / the ONNX reference resize (onnx.backend.test.case.node.resize).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>

#include "engine/core/op_registry.h"
#include "engine/runtime/executor.h"

namespace xnn {
namespace {

using Attrs = std::map<std::string, Attribute>;
constexpr int64_t kMaxI64 = std::numeric_limits<int64_t>::max();
constexpr int64_t kMinI64 = std::numeric_limits<int64_t>::min();

Node make_node(const std::string& op, const std::vector<const Tensor*>& inputs, Attrs attrs, int num_outputs) {
  Node n;
  n.op_type = op;
  n.name = "n_" + op;
  for (size_t i = 0; i < inputs.size(); ++i) n.inputs.push_back(inputs[i] ? static_cast<int>(i) : -1);
  for (int o = 0; o < num_outputs; ++o) n.outputs.push_back(100 + o);
  n.attrs = std::move(attrs);
  return n;
}

// Runs one node; a null input is an absent optional input.
std::vector<Tensor> run_all(const std::string& op, const std::vector<const Tensor*>& inputs, Attrs attrs = {},
                            int num_outputs = 1) {
  const Node n = make_node(op, inputs, std::move(attrs), num_outputs);
  std::vector<Tensor> outs;
  run_node(OpRegistry::builtin(), n, inputs, outs);
  return outs;
}

Tensor run(const std::string& op, const std::vector<const Tensor*>& inputs, Attrs attrs = {}) {
  return run_all(op, inputs, std::move(attrs))[0];
}

// The error message of running the node (empty if it succeeds).
std::string error_of(const std::string& op, const std::vector<const Tensor*>& inputs, Attrs attrs = {},
                     int num_outputs = 1) {
  try {
    run_all(op, inputs, std::move(attrs), num_outputs);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

Tensor F(std::vector<float> v, Shape s) { return Tensor::from_vector<float>(v, std::move(s)); }
Tensor F(std::vector<float> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return F(std::move(v), {n});
}
Tensor I64(std::vector<int64_t> v, Shape s) {
  return v.empty() ? Tensor(DType::kI64, std::move(s)) : Tensor::from_vector<int64_t>(v, std::move(s));
}
Tensor I64(std::vector<int64_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return I64(std::move(v), {n});
}
Tensor Iota(Shape s) {  // 0, 1, 2, ... as f32
  std::vector<float> v(static_cast<size_t>(shape_numel(s)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return F(v, std::move(s));
}

template <typename T>
std::vector<T> values(const Tensor& t) {
  const T* p = t.data<T>();
  return std::vector<T>(p, p + t.numel());
}
std::vector<float> floats(const Tensor& t) { return values<float>(t); }
std::vector<int64_t> ints(const Tensor& t) { return values<int64_t>(t); }

void expect_near(const Tensor& t, const std::vector<float>& want, float tol = 1e-5f) {
  const std::vector<float> got = floats(t);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

// ---- shape ops ---------------------------------------------------------------------------
TEST(ShapeOps, ShapeWithStartEndClamping) {
  const Tensor x(DType::kU8, {2, 3, 4, 5});
  EXPECT_EQ(ints(run("Shape", {&x})), (std::vector<int64_t>{2, 3, 4, 5}));
  EXPECT_EQ(ints(run("Shape", {&x}, {{"start", -3}, {"end", 100}})), (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(ints(run("Shape", {&x}, {{"start", 1}, {"end", -1}})), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(run("Shape", {&x}, {{"start", 3}, {"end", 1}}).shape(), (Shape{0}));
}

TEST(ShapeOps, ReshapeCopiesZeroAndInfersMinusOne) {
  const Tensor x = Iota({2, 3, 4});
  const Tensor shape = I64({0, -1, 2});
  const Tensor y = run("Reshape", {&x, &shape});
  EXPECT_EQ(y.shape(), (Shape{2, 6, 2}));
  EXPECT_EQ(floats(y), floats(x));
  const Tensor flat = I64({-1});
  EXPECT_EQ(run("Reshape", {&x, &flat}).shape(), (Shape{24}));
}

TEST(ShapeOps, ReshapeAllowZeroKeepsZeroDims) {
  const Tensor x(DType::kF32, {0, 3});
  const Tensor shape = I64({3, 0});
  EXPECT_EQ(run("Reshape", {&x, &shape}, {{"allowzero", 1}}).shape(), (Shape{3, 0}));
  // Without allowzero the 0 copies dim 1 (3): 3 x 3 != 0 elements.
  EXPECT_NE(error_of("Reshape", {&x, &shape}), "");
}

TEST(ShapeOps, ReshapeRejectsImpossibleShapes) {
  const Tensor x = Iota({2, 3});
  const Tensor two_minus_one = I64({-1, -1});
  const Tensor wrong_count = I64({4, 2});
  const Tensor not_divisible = I64({4, -1});
  const Tensor zero_past_rank = I64({6, 1, 0});
  const Tensor negative = I64({-2, 3});
  EXPECT_NE(error_of("Reshape", {&x, &two_minus_one}).find("more than one -1"), std::string::npos);
  EXPECT_NE(error_of("Reshape", {&x, &wrong_count}).find("n_Reshape"), std::string::npos);
  EXPECT_NE(error_of("Reshape", {&x, &not_divisible}), "");
  EXPECT_NE(error_of("Reshape", {&x, &zero_past_rank}), "");
  EXPECT_NE(error_of("Reshape", {&x, &negative}), "");
}

TEST(ShapeOps, FlattenAxes) {
  const Tensor x = Iota({2, 3, 4});
  EXPECT_EQ(run("Flatten", {&x}).shape(), (Shape{2, 12}));
  EXPECT_EQ(run("Flatten", {&x}, {{"axis", 0}}).shape(), (Shape{1, 24}));
  EXPECT_EQ(run("Flatten", {&x}, {{"axis", -1}}).shape(), (Shape{6, 4}));
  EXPECT_EQ(run("Flatten", {&x}, {{"axis", 3}}).shape(), (Shape{24, 1}));
  EXPECT_NE(error_of("Flatten", {&x}, {{"axis", 4}}), "");
}

TEST(ShapeOps, SqueezeAxesAsInputOrAttribute) {
  const Tensor x = Iota({1, 3, 1, 2});
  const Tensor axes = I64({-2});
  EXPECT_EQ(run("Squeeze", {&x, &axes}).shape(), (Shape{1, 3, 2}));
  EXPECT_EQ(run("Squeeze", {&x}, {{"axes", std::vector<int64_t>{0}}}).shape(), (Shape{3, 1, 2}));
  EXPECT_EQ(run("Squeeze", {&x}).shape(), (Shape{3, 2}));
  const Tensor bad = I64({1});
  EXPECT_NE(error_of("Squeeze", {&x, &bad}).find("cannot squeeze axis 1"), std::string::npos);
}

TEST(ShapeOps, UnsqueezeAxesAsInputOrAttribute) {
  const Tensor x = Iota({3, 2});
  const Tensor axes = I64({-1, 0});
  const Tensor y = run("Unsqueeze", {&x, &axes});
  EXPECT_EQ(y.shape(), (Shape{1, 3, 2, 1}));
  EXPECT_EQ(floats(y), floats(x));
  EXPECT_EQ(run("Unsqueeze", {&x}, {{"axes", std::vector<int64_t>{1, 3}}}).shape(), (Shape{3, 1, 2, 1}));
  const Tensor duplicate = I64({1, 1});
  EXPECT_NE(error_of("Unsqueeze", {&x, &duplicate}), "");
  EXPECT_NE(error_of("Unsqueeze", {&x}), "");
}

TEST(ShapeOps, ExpandBroadcastsBothWays) {
  const Tensor x = F({1, 2, 3}, {3, 1});
  const Tensor shape = I64({2, 1, 2});
  const Tensor y = run("Expand", {&x, &shape});
  EXPECT_EQ(y.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(floats(y), (std::vector<float>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
  const Tensor smaller = I64({1, 1});  // the input's larger dims win
  EXPECT_EQ(run("Expand", {&x, &smaller}).shape(), (Shape{3, 1}));
  const Tensor clash = I64({2, 2});
  EXPECT_NE(error_of("Expand", {&x, &clash}), "");
}

TEST(ShapeOps, ConstantOfShapeAndConstant) {
  const Tensor shape = I64({2, 2});
  const Tensor zeros = run("ConstantOfShape", {&shape});
  EXPECT_EQ(zeros.dtype(), DType::kF32);
  EXPECT_EQ(floats(zeros), (std::vector<float>{0, 0, 0, 0}));
  const Tensor sevens = run("ConstantOfShape", {&shape}, {{"value", I64({7}, {1})}});
  EXPECT_EQ(ints(sevens), (std::vector<int64_t>{7, 7, 7, 7}));
  const Tensor empty = I64({}, {0});
  EXPECT_EQ(run("ConstantOfShape", {&empty}).shape(), Shape{});

  EXPECT_EQ(floats(run("Constant", {}, {{"value", F({1, 2}, {2})}})), (std::vector<float>{1, 2}));
  EXPECT_EQ(floats(run("Constant", {}, {{"value_floats", std::vector<float>{3, 4}}})), (std::vector<float>{3, 4}));
  const Tensor i = run("Constant", {}, {{"value_int", int64_t{5}}});
  EXPECT_EQ(i.shape(), Shape{});
  EXPECT_EQ(ints(i), (std::vector<int64_t>{5}));
  EXPECT_EQ(run("Constant", {}, {{"value_ints", std::vector<int64_t>{}}}).shape(), (Shape{0}));
  EXPECT_THROW(run("Constant", {}, {{"value_string", "x"}}), UnsupportedError);
}

// ---- data movement -----------------------------------------------------------------------
TEST(DataMovement, TransposeDefaultReversesAndPermIsChecked) {
  const Tensor x = Iota({2, 3});
  const Tensor y = run("Transpose", {&x});
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  EXPECT_EQ(floats(y), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  const Tensor z = Iota({2, 3, 4});
  const Tensor t = run("Transpose", {&z}, {{"perm", std::vector<int64_t>{1, 2, 0}}});
  EXPECT_EQ(t.shape(), (Shape{3, 4, 2}));
  EXPECT_EQ(t.data<float>()[1], 12.0f);  // t[0,0,1] = z[1,0,0]
  EXPECT_NE(error_of("Transpose", {&z}, {{"perm", std::vector<int64_t>{0, 0, 1}}}), "");
}

TEST(DataMovement, ConcatNegativeAxis) {
  const Tensor a = Iota({2, 2});
  const Tensor b = F({9, 8}, {2, 1});
  const Tensor y = run("Concat", {&a, &b}, {{"axis", -1}});
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(floats(y), (std::vector<float>{0, 1, 9, 2, 3, 8}));
  const Tensor c = F({1, 2, 3}, {1, 3});
  EXPECT_NE(error_of("Concat", {&a, &c}, {{"axis", 1}}), "");
}

TEST(DataMovement, SplitBySizesAttributeOutputsAndNumOutputs) {
  const Tensor x = Iota({2, 5});
  const Tensor sizes = I64({2, 3});
  auto parts = run_all("Split", {&x, &sizes}, {{"axis", -1}}, 2);
  EXPECT_EQ(parts[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(floats(parts[1]), (std::vector<float>{2, 3, 4, 7, 8, 9}));
  parts = run_all("Split", {&x}, {{"axis", 1}, {"split", std::vector<int64_t>{4, 1}}}, 2);
  EXPECT_EQ(floats(parts[1]), (std::vector<float>{4, 9}));
  parts = run_all("Split", {&x}, {{"axis", 0}}, 2);
  EXPECT_EQ(floats(parts[1]), (std::vector<float>{5, 6, 7, 8, 9}));
  parts = run_all("Split", {&x}, {{"axis", 1}, {"num_outputs", 3}}, 3);  // opset 18: 2, 2, 1
  EXPECT_EQ(parts[2].shape(), (Shape{2, 1}));
  EXPECT_NE(error_of("Split", {&x}, {{"axis", 1}}, 2), "");  // 5 does not split evenly in 2
  const Tensor bad = I64({2, 2});
  EXPECT_NE(error_of("Split", {&x, &bad}, {{"axis", 1}}, 2), "");
}

TEST(DataMovement, SliceNegativeStepsAndClamping) {
  const Tensor x = Iota({3, 4});
  const Tensor starts = I64({-1, kMaxI64});
  const Tensor ends = I64({kMinI64, 0});
  const Tensor axes = I64({-2, 1});
  const Tensor steps = I64({-2, -1});
  // Rows 2, 0; columns 3, 2, 1 (end 0 is exclusive).
  const Tensor y = run("Slice", {&x, &starts, &ends, &axes, &steps});
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(floats(y), (std::vector<float>{11, 10, 9, 3, 2, 1}));

  const Tensor s2 = I64({1}), e2 = I64({1000});  // default axes (0) and steps (1)
  EXPECT_EQ(floats(run("Slice", {&x, &s2, &e2})), (std::vector<float>{4, 5, 6, 7, 8, 9, 10, 11}));
  const Tensor s3 = I64({-100}), e3 = I64({-3});  // start clamps to 0
  const Tensor ax1 = I64({1});
  EXPECT_EQ(floats(run("Slice", {&x, &s3, &e3, &ax1})), (std::vector<float>{0, 4, 8}));
  const Tensor empty_s = I64({3}), empty_e = I64({1});
  EXPECT_EQ(run("Slice", {&x, &empty_s, &empty_e, &ax1}).shape(), (Shape{3, 0}));
  // Going backward, a start before the first element clamps to 0 (ONNX), selecting it.
  const Tensor v = F({5, 6, 7});
  const Tensor back_s = I64({-10}), back_e = I64({kMinI64}), back_step = I64({-1});
  EXPECT_EQ(floats(run("Slice", {&v, &back_s, &back_e, nullptr, &back_step})), (std::vector<float>{5}));
  const Tensor zero_step = I64({0});
  EXPECT_NE(error_of("Slice", {&v, &s2, &e2, nullptr, &zero_step}), "");
}

TEST(DataMovement, GatherNegativeIndicesAndAxis) {
  const Tensor x = Iota({3, 2});
  const Tensor idx = I64({-1, 0, 2, 1}, {2, 2});
  const Tensor y = run("Gather", {&x, &idx});
  EXPECT_EQ(y.shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(floats(y), (std::vector<float>{4, 5, 0, 1, 4, 5, 2, 3}));
  const Tensor col = Tensor::from_vector<int32_t>({1}, {});
  const Tensor z = run("Gather", {&x, &col}, {{"axis", -1}});
  EXPECT_EQ(z.shape(), (Shape{3}));
  EXPECT_EQ(floats(z), (std::vector<float>{1, 3, 5}));
}

TEST(DataMovement, GatherOutOfRangeIndexIsAnErrorNamingTheNode) {
  const Tensor x = Iota({3, 2});
  const Tensor too_big = I64({0, 3});
  const Tensor too_small = I64({-4});
  const std::string msg = error_of("Gather", {&x, &too_big});
  EXPECT_NE(msg.find("n_Gather"), std::string::npos) << msg;
  EXPECT_NE(msg.find("index 3 is out of range"), std::string::npos) << msg;
  EXPECT_NE(error_of("Gather", {&x, &too_small}), "");
}

TEST(DataMovement, Tile) {
  const Tensor x = F({1, 2, 3, 4}, {2, 2});
  const Tensor reps = I64({1, 2});
  const Tensor y = run("Tile", {&x, &reps});
  EXPECT_EQ(y.shape(), (Shape{2, 4}));
  EXPECT_EQ(floats(y), (std::vector<float>{1, 2, 1, 2, 3, 4, 3, 4}));
  const Tensor wrong_len = I64({2});
  EXPECT_NE(error_of("Tile", {&x, &wrong_len}), "");
}

TEST(DataMovement, PadConstantReflectEdge) {
  const Tensor x = F({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor pads = I64({0, 2, 0, 1});  // columns: 2 before, 1 after
  const Tensor value = Tensor::scalar<float>(9);
  expect_near(run("Pad", {&x, &pads, &value}), {9, 9, 1, 2, 3, 9, 9, 9, 4, 5, 6, 9});
  expect_near(run("Pad", {&x, &pads}), {0, 0, 1, 2, 3, 0, 0, 0, 4, 5, 6, 0});
  expect_near(run("Pad", {&x, &pads}, {{"mode", "reflect"}}), {3, 2, 1, 2, 3, 2, 6, 5, 4, 5, 6, 5});
  expect_near(run("Pad", {&x, &pads}, {{"mode", "edge"}}), {1, 1, 1, 2, 3, 3, 4, 4, 4, 5, 6, 6});
  // Reflecting further than the axis is long keeps bouncing (numpy): 1 2 3 -> 2 1 2 3 2 1.
  const Tensor row = F({1, 2, 3});
  const Tensor far = I64({3, 2});
  expect_near(run("Pad", {&row, &far}, {{"mode", "reflect"}}), {2, 3, 2, 1, 2, 3, 2, 1});
}

TEST(DataMovement, PadNegativePadsCropAndAxesInput) {
  const Tensor x = F({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor pads = I64({-1, 1});  // axis -1 only: drop the first column, add one at the end
  const Tensor axes = I64({-1});
  const Tensor y = run("Pad", {&x, &pads, nullptr, &axes}, {{"mode", "edge"}});
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  expect_near(y, {2, 3, 3, 5, 6, 6});
  const Tensor too_negative = I64({0, -2, 0, -2});
  EXPECT_NE(error_of("Pad", {&x, &too_negative}), "");
}

TEST(DataMovement, DepthToSpaceModesAndSpaceToDepthRoundTrip) {
  const Tensor x = Iota({1, 4, 1, 2});  // channels c0..c3 with 2 columns each
  const Tensor dcr = run("DepthToSpace", {&x}, {{"blocksize", 2}});
  EXPECT_EQ(dcr.shape(), (Shape{1, 1, 2, 4}));
  EXPECT_EQ(floats(dcr), (std::vector<float>{0, 2, 1, 3, 4, 6, 5, 7}));
  const Tensor x8 = Iota({1, 8, 1, 1});
  const Tensor crd = run("DepthToSpace", {&x8}, {{"blocksize", 2}, {"mode", "CRD"}});
  EXPECT_EQ(crd.shape(), (Shape{1, 2, 2, 2}));
  EXPECT_EQ(floats(crd), (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}));
  const Tensor back = run("SpaceToDepth", {&dcr}, {{"blocksize", 2}});
  EXPECT_EQ(back.shape(), x.shape());
  EXPECT_EQ(floats(back), floats(x));
  EXPECT_NE(error_of("DepthToSpace", {&x}, {{"blocksize", 3}}), "");
}

// Data movement is one byte-copy path for every dtype: check each dtype's bits move intact.
TEST(DataMovement, EveryDtypeMovesBitsIntact) {
  for (DType dt :
       {DType::kF32, DType::kF16, DType::kI8, DType::kU8, DType::kI32, DType::kI64, DType::kBool, DType::kF64}) {
    Tensor x(dt, {2, 3});
    auto* bytes = static_cast<unsigned char*>(x.raw());
    for (size_t i = 0; i < x.nbytes(); ++i)
      bytes[i] = static_cast<unsigned char>(dt == DType::kBool ? i % 2 : i * 7 + 1);
    const size_t es = dtype_size(dt);
    auto element = [&](const Tensor& t, int64_t i) {
      return std::string(static_cast<const char*>(t.raw()) + i * static_cast<int64_t>(es), es);
    };
    const Tensor t = run("Transpose", {&x});
    EXPECT_EQ(element(t, 1), element(x, 3)) << dtype_name(dt);
    const Tensor s = I64({-1}), e = I64({kMinI64}), ax = I64({1}), st = I64({-1});
    const Tensor sl = run("Slice", {&x, &s, &e, &ax, &st});
    EXPECT_EQ(element(sl, 0), element(x, 2)) << dtype_name(dt);
    const Tensor idx = I64({1});
    EXPECT_EQ(element(run("Gather", {&x, &idx}), 0), element(x, 3)) << dtype_name(dt);
    const Tensor cat = run("Concat", {&x, &x}, {{"axis", 1}});
    EXPECT_EQ(element(cat, 3), element(x, 0)) << dtype_name(dt);
    const Tensor pads = I64({0, 1, 0, 0});
    const Tensor padded = run("Pad", {&x, &pads}, {{"mode", "edge"}});
    EXPECT_EQ(element(padded, 0), element(x, 0)) << dtype_name(dt);
  }
}

TEST(DataMovement, CostIsBytesOnly) {
  const Tensor x = Iota({4, 8});
  const Node n = make_node("Transpose", {&x}, {}, 1);
  const OpSchema* s = OpRegistry::builtin().find("Transpose");
  ASSERT_NE(s, nullptr);
  const TensorInfo in{DType::kF32, {4, 8}, nullptr}, out{DType::kF32, {8, 4}, nullptr};
  const OpCost c = s->cost(n, std::span<const TensorInfo>(&in, 1), std::span<const TensorInfo>(&out, 1));
  EXPECT_EQ(c.macs, 0);
  EXPECT_EQ(c.bytes_read, 128);
  EXPECT_EQ(c.bytes_written, 128);
}

// ---- Resize / Upsample -------------------------------------------------------------------
TEST(Resize, NearestModesWithAsymmetricCoordinates) {
  const Tensor x = F({10, 20, 30});
  const Tensor scale2 = F({2}), scale3 = F({3});
  const Attrs asym = {{"coordinate_transformation_mode", "asymmetric"}};
  auto nearest = [&](const Tensor& scales, const char* mode) {
    Attrs a = asym;
    a["nearest_mode"] = mode;
    return floats(run("Resize", {&x, nullptr, &scales}, a));
  };
  // Source coordinates j/2: 0, .5, 1, 1.5, 2, 2.5 (ties decide) and j/3 (no ties).
  EXPECT_EQ(nearest(scale2, "round_prefer_floor"), (std::vector<float>{10, 10, 20, 20, 30, 30}));
  EXPECT_EQ(nearest(scale2, "round_prefer_ceil"), (std::vector<float>{10, 20, 20, 30, 30, 30}));
  EXPECT_EQ(nearest(scale3, "round_prefer_floor"), (std::vector<float>{10, 10, 20, 20, 20, 30, 30, 30, 30}));
  EXPECT_EQ(nearest(scale3, "floor"), (std::vector<float>{10, 10, 10, 20, 20, 20, 30, 30, 30}));
  EXPECT_EQ(nearest(scale3, "ceil"), (std::vector<float>{10, 20, 20, 20, 30, 30, 30, 30, 30}));
}

TEST(Resize, NearestTfHalfPixelForNNWithSizes) {  // ONNX test_resize_downsample_sizes_nearest_tf_half_pixel_for_nn
  const Tensor x = Iota({1, 1, 4, 4});
  const Tensor sizes = I64({1, 1, 3, 2});
  const Tensor y =
      run("Resize", {&x, nullptr, nullptr, &sizes}, {{"coordinate_transformation_mode", "tf_half_pixel_for_nn"}});
  EXPECT_EQ(y.shape(), (Shape{1, 1, 3, 2}));
  EXPECT_EQ(floats(y), (std::vector<float>{5, 7, 9, 11, 13, 15}));
}

TEST(Resize, BilinearCoordinateModes) {
  const Tensor x = F({1, 2, 3, 4}, {1, 1, 2, 2});
  const Tensor scales = F({1, 1, 2, 2});
  auto linear = [&](const char* coord) {
    return run("Resize", {&x, nullptr, &scales}, {{"mode", "linear"}, {"coordinate_transformation_mode", coord}});
  };
  const std::vector<float> half_pixel = {1,   1.25, 1.75, 2,   1.5, 1.75, 2.25, 2.5,
                                         2.5, 2.75, 3.25, 3.5, 3,   3.25, 3.75, 4};
  expect_near(linear("half_pixel"), half_pixel);
  expect_near(linear("pytorch_half_pixel"), half_pixel);
  expect_near(linear("align_corners"), {1, 4.f / 3, 5.f / 3, 2, 5.f / 3, 2, 7.f / 3, 8.f / 3, 7.f / 3, 8.f / 3, 3,
                                        10.f / 3, 3, 10.f / 3, 11.f / 3, 4});
  expect_near(linear("asymmetric"), {1, 1.5, 2, 2, 2, 2.5, 3, 3, 3, 3.5, 4, 4, 3, 3.5, 4, 4});
  // Default coordinate mode (half_pixel), downsampling 4x4 by 0.6 -> 2x2.
  const Tensor big = F({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, {4, 4});
  const Tensor down = F({0.6f, 0.6f});
  expect_near(run("Resize", {&big, nullptr, &down}, {{"mode", "linear"}}), {2.6666667f, 4.3333333f, 9.3333333f, 11.0f});
}

TEST(Resize, TfCropAndResizeExtrapolates) {
  const Tensor x = Iota({4, 4});
  const Tensor roi = F({0.4f, 0.6f, 1.2f, 1.7f});
  const Tensor sizes = I64({3, 3});
  const Tensor y = run(
      "Resize", {&x, &roi, nullptr, &sizes},
      {{"mode", "linear"}, {"coordinate_transformation_mode", "tf_crop_and_resize"}, {"extrapolation_value", 10.0f}});
  // numpy reference on 1..16 gives 7.6, 12.4; on 0..15 one less.
  expect_near(y, {6.6f, 10, 10, 11.4f, 10, 10, 10, 10, 10});
}

TEST(Resize, LinearOnIntegersRoundsAndAntialiasIsUnsupported) {
  const Tensor x = Tensor::from_vector<uint8_t>({0, 255, 100}, {3});
  const Tensor scales = F({2});
  // Interpolated 0, 63.75, 191.25, 216.25, 138.75, 100 round to nearest.
  EXPECT_EQ(values<uint8_t>(run("Resize", {&x, nullptr, &scales}, {{"mode", "linear"}})),
            (std::vector<uint8_t>{0, 64, 191, 216, 139, 100}));
  EXPECT_THROW(run("Resize", {&x, nullptr, &scales}, {{"mode", "cubic"}, {"antialias", int64_t{1}}}), UnsupportedError);
  const Tensor sizes = I64({6});
  EXPECT_NE(error_of("Resize", {&x, nullptr, &scales, &sizes}).find("exactly one of scales"), std::string::npos);
}

TEST(Resize, UpsampleScalesAsAttributeOrInput) {
  const Tensor x = F({1, 2, 3, 4}, {1, 1, 2, 2});
  const std::vector<float> nearest = {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4};
  const Tensor y7 = run("Upsample", {&x}, {{"scales", std::vector<float>{1, 1, 2, 3}}});
  EXPECT_EQ(y7.shape(), (Shape{1, 1, 4, 6}));
  EXPECT_EQ(floats(y7), nearest);
  const Tensor scales = F({1, 1, 2, 3});
  EXPECT_EQ(floats(run("Upsample", {&x, &scales})), nearest);
  const Tensor s2 = F({1, 1, 2, 2});
  expect_near(run("Upsample", {&x, &s2}, {{"mode", "linear"}}),
              {1, 1.5, 2, 2, 2, 2.5, 3, 3, 3, 3.5, 4, 4, 3, 3.5, 4, 4});
}

// ---- reductions --------------------------------------------------------------------------
TEST(Reduce, SumAxesInputKeepdims) {
  const Tensor x = Iota({2, 3});
  const Tensor axes = I64({-1});
  const Tensor kept = run("ReduceSum", {&x, &axes});
  EXPECT_EQ(kept.shape(), (Shape{2, 1}));
  EXPECT_EQ(floats(kept), (std::vector<float>{3, 12}));
  const Tensor dropped = run("ReduceSum", {&x, &axes}, {{"keepdims", 0}});
  EXPECT_EQ(dropped.shape(), (Shape{2}));
  const Tensor all = run("ReduceSum", {&x}, {{"keepdims", 0}});
  EXPECT_EQ(all.shape(), Shape{});
  EXPECT_EQ(floats(all), (std::vector<float>{15}));
}

TEST(Reduce, NoopWithEmptyAxes) {
  const Tensor x = Iota({2, 3});
  const Tensor no_axes = I64({});
  const Tensor same = run("ReduceSum", {&x, &no_axes}, {{"noop_with_empty_axes", 1}});
  EXPECT_EQ(same.shape(), x.shape());
  EXPECT_EQ(floats(same), floats(x));
  EXPECT_EQ(run("ReduceSum", {&x, &no_axes}).shape(), (Shape{1, 1}));  // empty axes without noop: all
}

TEST(Reduce, MeanMaxMinProdL2) {
  const Tensor x = F({1, -2, 3, 4, 5, -6}, {2, 3});
  const Attrs axis0 = {{"axes", std::vector<int64_t>{0}}, {"keepdims", 0}};
  EXPECT_EQ(floats(run("ReduceMean", {&x}, axis0)), (std::vector<float>{2.5f, 1.5f, -1.5f}));
  EXPECT_EQ(floats(run("ReduceMax", {&x}, axis0)), (std::vector<float>{4, 5, 3}));
  EXPECT_EQ(floats(run("ReduceMin", {&x}, axis0)), (std::vector<float>{1, -2, -6}));
  EXPECT_EQ(floats(run("ReduceProd", {&x}, axis0)), (std::vector<float>{4, -10, -18}));
  const Tensor axes1 = I64({1});  // opset 18 axes input for every reduction
  expect_near(run("ReduceL2", {&x, &axes1}), {std::sqrt(14.0f), std::sqrt(77.0f)});
  expect_near(run("ReduceLogSumExp", {&x, &axes1}, {{"keepdims", 0}}),
              {std::log(std::exp(1.f) + std::exp(-2.f) + std::exp(3.f)),
               std::log(std::exp(4.f) + std::exp(5.f) + std::exp(-6.f))});
  const Tensor xi = Tensor::from_vector<int32_t>({7, -3, 2, 9}, {2, 2});
  EXPECT_EQ(values<int32_t>(run("ReduceMax", {&xi}, {{"keepdims", 0}})), (std::vector<int32_t>{9}));
  EXPECT_EQ(values<int32_t>(run("ReduceSum", {&xi}, {{"axes", std::vector<int64_t>{1}}})),
            (std::vector<int32_t>{4, 11}));
}

TEST(Reduce, ArgMaxArgMinWithTiesAndKeepdims) {
  const Tensor x = F({1, 3, 3, 0, 2, 0}, {2, 3});
  const Tensor first = run("ArgMax", {&x}, {{"axis", 1}});
  EXPECT_EQ(first.dtype(), DType::kI64);
  EXPECT_EQ(first.shape(), (Shape{2, 1}));
  EXPECT_EQ(ints(first), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(ints(run("ArgMax", {&x}, {{"axis", -1}, {"select_last_index", 1}, {"keepdims", 0}})),
            (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(ints(run("ArgMin", {&x}, {{"axis", 1}, {"keepdims", 0}})), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(ints(run("ArgMin", {&x}, {{"axis", 1}, {"keepdims", 0}, {"select_last_index", 1}})),
            (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(ints(run("ArgMax", {&x}, {{"keepdims", 0}})), (std::vector<int64_t>{0, 0, 0}));
}

TEST(Reduce, CostIsOneMacPerInputElement) {
  const OpSchema* s = OpRegistry::builtin().find("ReduceMean");
  ASSERT_NE(s, nullptr);
  const Tensor x = Iota({4, 8});
  const Node n = make_node("ReduceMean", {&x}, {}, 1);
  const TensorInfo in{DType::kF32, {4, 8}, nullptr}, out{DType::kF32, {1, 1}, nullptr};
  EXPECT_EQ(s->cost(n, std::span<const TensorInfo>(&in, 1), std::span<const TensorInfo>(&out, 1)).macs, 32);
}

// ---- Resize cubic ------------------------------------------------------------------------
// Expected values from the ONNX reference resize (cubic_coeffs, interpolate_1d_with_x).
TEST(Resize, CubicOneDimensionalCoordinateModes) {
  const Tensor x = F({1, 2, 3, 4});
  const Tensor scales = F({2});
  auto cubic = [&](Attrs a) {
    a["mode"] = "cubic";
    return run("Resize", {&x, nullptr, &scales}, a);
  };
  // Asymmetric, hand-checkable: integral coordinates copy; at x.5 the A = -0.75 kernel weights
  // are (-3/32, 19/32, 19/32, -3/32), e.g. 1.5 -> -3/32*1 + 19/32*(2 + 3) - 3/32*4 = 2.5 and,
  // at the right edge (taps 2..5 clamp to 3, 4, 4, 4), 3.5 -> 4.09375.
  expect_near(cubic({{"coordinate_transformation_mode", "asymmetric"}}), {1, 1.40625, 2, 2.5, 3, 3.59375, 4, 4.09375});
  expect_near(cubic({}), {0.89453125f, 1.19140625f, 1.66796875f, 2.296875f, 2.703125f, 3.33203125f, 3.80859375f,
                          4.10546875f});
  expect_near(cubic({{"coordinate_transformation_mode", "pytorch_half_pixel"}}),
              {0.89453125f, 1.19140625f, 1.66796875f, 2.296875f, 2.703125f, 3.33203125f, 3.80859375f, 4.10546875f});
  expect_near(cubic({{"coordinate_transformation_mode", "align_corners"}}),
              {1.0f, 1.3411079f, 1.8002915f, 2.3294461f, 2.6705539f, 3.1997085f, 3.6588921f, 4.0f});
  // exclude_outside drops the taps beyond the edges and renormalises the rest.
  expect_near(cubic({{"cubic_coeff_a", -0.5f}, {"exclude_outside", int64_t{1}}}),
              {0.91176471f, 1.1678832f, 1.7099237f, 2.25f, 2.75f, 3.2900763f, 3.8321168f, 4.0882353f});
  // A constant stays constant (the weights sum to 1), with and without exclude_outside.
  const Tensor c = F({5, 5, 5});
  const Tensor up = F({2.5f});
  expect_near(run("Resize", {&c, nullptr, &up}, {{"mode", "cubic"}}), {5, 5, 5, 5, 5, 5, 5});
  expect_near(run("Resize", {&c, nullptr, &up}, {{"mode", "cubic"}, {"exclude_outside", int64_t{1}}}),
              {5, 5, 5, 5, 5, 5, 5});
}

TEST(Resize, CubicIsSeparableWithSizes) {
  // x = u (x) v with u = [1, 2], v = [1, 2, 3, 4]; resizing to [4, 3] gives R(u) (x) R(v), where
  // R(u) = [0.89453125, 1.2265625, 1.7734375, 2.10546875] and R(v) = [1.1261574, 2.5, 3.8738426].
  const Tensor x = F({1, 2, 3, 4, 2, 4, 6, 8}, {2, 4});
  const Tensor sizes = I64({4, 3}, {2});
  const Tensor y = run("Resize", {&x, nullptr, nullptr, &sizes}, {{"mode", "cubic"}});
  EXPECT_EQ(y.shape(), (Shape{4, 3}));
  expect_near(y, {1.0073830f, 2.2363281f, 3.4652733f, 1.3813024f, 3.0664063f, 4.7515101f, 1.9971698f, 4.4335938f,
                  6.8700177f, 2.3710892f, 5.2636719f, 8.1562545f});
  // Integers round to nearest: [10, 20] upsampled x2 -> 8.9453125, 12.265625, 17.734375, 21.0546875.
  const Tensor u8 = Tensor::from_vector<uint8_t>({10, 20}, {2});
  const Tensor two = F({2});
  EXPECT_EQ(values<uint8_t>(run("Resize", {&u8, nullptr, &two}, {{"mode", "cubic"}})),
            (std::vector<uint8_t>{9, 12, 18, 21}));
}

}  // namespace
}  // namespace xnn
