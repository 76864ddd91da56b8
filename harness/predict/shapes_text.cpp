#include "harness/predict/shapes_text.h"

#include "engine/core/error.h"

namespace xnn::predict {
namespace {

class ShapesParser {
 public:
  explicit ShapesParser(const std::string& text) : text_(text) {}

  OpShapes parse() {
    OpShapes s;
    s.inputs = shape_list('-');
    expect('-');
    expect('>');
    s.outputs = shape_list('\0');
    if (pos_ != text_.size()) fail("unexpected '" + std::string(1, text_[pos_]) + "' after the output shapes");
    if (s.outputs.empty()) fail("no output shape after '->'");
    return s;
  }

 private:
  // Shapes separated by ';' up to `stop` (or the end); an empty list is allowed.
  std::vector<Shape> shape_list(char stop) {
    std::vector<Shape> out;
    if (at_end() || text_[pos_] == stop) return out;
    out.push_back(shape());
    while (!at_end() && text_[pos_] == ';') {
      ++pos_;
      out.push_back(shape());
    }
    return out;
  }

  Shape shape() {
    expect('[');
    Shape s;
    if (!at_end() && text_[pos_] == ']') {
      ++pos_;
      return s;
    }
    for (;;) {
      s.push_back(dim());
      if (at_end()) fail("unterminated shape (expected ']')");
      if (text_[pos_] == ']') {
        ++pos_;
        return s;
      }
      expect(',');
    }
  }

  int64_t dim() {
    const size_t start = pos_;
    int64_t v = 0;
    while (!at_end() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      if (v > (int64_t{1} << 50)) fail("dimension too large");
      v = v * 10 + (text_[pos_] - '0');
      ++pos_;
    }
    if (pos_ == start) fail("expected a non-negative integer dimension");
    return v;
  }

  void expect(char c) {
    if (at_end()) fail(std::string("expected '") + c + "', found the end of the text");
    if (text_[pos_] != c) fail(std::string("expected '") + c + "', found '" + text_[pos_] + "'");
    ++pos_;
  }
  bool at_end() const { return pos_ >= text_.size(); }

  [[noreturn]] void fail(const std::string& what) const {
    throw Error("op shapes \"" + text_ + "\": " + what + " at character " + std::to_string(pos_ + 1) +
                " (expected e.g. \"[1,32,56,56];[64,32,1,1]->[1,64,56,56]\")");
  }

  const std::string& text_;
  size_t pos_ = 0;
};

}  // namespace

OpShapes parse_shapes_text(const std::string& text) { return ShapesParser(text).parse(); }

std::string shapes_text(const std::vector<Shape>& inputs, const std::vector<Shape>& outputs) {
  std::string s;
  auto append = [&s](const std::vector<Shape>& shapes) {
    for (size_t i = 0; i < shapes.size(); ++i) {
      if (i) s += ';';
      s += shape_str(shapes[i]);
    }
  };
  append(inputs);
  s += "->";
  append(outputs);
  return s;
}

}  // namespace xnn::predict
