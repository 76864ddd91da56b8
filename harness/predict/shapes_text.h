// The per-op shapes text the CPU target stores with each profile row
// ("[1,32,56,56];[64,32,1,1];[]->[1,64,56,56]": inputs ';'-separated, '->', outputs), parsed
// back into shapes so stored profiles and a freshly prepared session featurise the same way.
#pragma once
#include <string>
#include <vector>

#include "engine/core/tensor.h"

namespace xnn::predict {

struct OpShapes {
  std::vector<Shape> inputs, outputs;  // an absent optional input is an empty shape "[]"
};

// Throws xnn::Error quoting the text and the offending position for anything malformed.
OpShapes parse_shapes_text(const std::string& text);
// The inverse (the CPU target's format), for tests and for featurising a live session alike.
std::string shapes_text(const std::vector<Shape>& inputs, const std::vector<Shape>& outputs);

}  // namespace xnn::predict
