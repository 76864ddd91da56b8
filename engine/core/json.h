// A small, strict JSON (RFC 8259) value with a parser and a writer, for the documents xnn-lab
// reads and writes itself: the bundle manifest (engine/bundle/bundle_manifest.h) and the latency
// predictor file (harness/predict/predictor_file.h, ~10^5 tree nodes, which yaml-cpp reads too
// slowly). The engine has no JSON library and must not depend on the harness. Objects keep their key order and
// refuse duplicate keys, integers without a fraction or exponent are kept exact (int64), and
// anything RFC 8259 does not allow (trailing commas, comments, NaN, leading zeros, control
// characters in strings, invalid UTF-8 escapes, trailing bytes) is an xnn::Error naming the
// document and the byte offset.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace xnn::json {

class Value {
 public:
  enum class Kind { kNull, kBool, kInt, kDouble, kString, kArray, kObject };

  Value() = default;
  static Value boolean(bool b);
  static Value integer(int64_t v);
  static Value real(double v);
  static Value string(std::string s);
  static Value array();
  static Value object();

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::kNull; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kDouble; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool is_object() const { return kind_ == Kind::kObject; }

  // Accessors check the kind (xnn::Error "expected <kind>, got <kind>").
  bool as_bool() const;
  int64_t as_int() const;
  double as_double() const;  // ints convert
  const std::string& as_string() const;
  const std::vector<Value>& items() const;
  const std::vector<std::pair<std::string, Value>>& members() const;

  // Object member or nullptr.
  const Value* find(std::string_view key) const;

  // The line the parser found this value on (1-based; 0 for values built in code).
  int line() const { return line_; }
  void set_line(int line) { line_ = line; }
  // For readers of documents with a schema: errors "LINE: WHAT: expected EXPECTED" (the caller
  // prefixes the document's name), where `what` names the key or element being read.
  [[noreturn]] void fail(const std::string& what, const std::string& expected) const;
  double number(const std::string& what) const;               // int or double
  const std::string& text(const std::string& what) const;
  bool flag(const std::string& what) const;
  const std::vector<Value>& list(const std::string& what) const;
  // A member that must exist ("LINE: missing key "KEY": expected it in this object").
  const Value& at(const std::string& key) const;
  // Appends to an array / sets an object member (replacing an equal key). Return *this.
  Value& push(Value v);
  Value& set(const std::string& key, Value v);

 private:
  Kind kind_ = Kind::kNull;
  int line_ = 0;
  bool bool_ = false;
  int64_t int_ = 0;
  double double_ = 0;
  std::string string_;
  std::vector<Value> items_;
  std::vector<std::pair<std::string, Value>> members_;
};

std::string_view kind_name(Value::Kind kind);  // "an object", "a string", ...

// Parses a whole document; `name` prefixes error messages ("NAME: JSON error at byte N: ...").
Value parse(std::string_view text, const std::string& name);
// Compact when indent < 0, else pretty-printed with `indent` spaces per level. Doubles are
// written with the shortest round-trip representation; non-finite doubles are an error.
std::string dump(const Value& v, int indent = -1);

}  // namespace xnn::json
