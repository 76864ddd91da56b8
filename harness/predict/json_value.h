// A small JSON reader for the predictor file: a fitted predictor holds ~10^5 tree nodes,
// which yaml-cpp reads too slowly for a CLI that predicts in milliseconds. Values remember the
// line they start on, so errors read "FILE:LINE: WHAT: expected ...".
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace xnn::predict {

class JsonValue {
 public:
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };

  // Parses `text`; `source` (a file name) prefixes error messages. Throws xnn::Error.
  static JsonValue parse(const std::string& text, const std::string& source);

  Kind kind() const { return kind_; }
  int line() const { return line_; }

  // Typed access; each throws xnn::Error naming the source, line, `what` and the expected type.
  double as_number(const std::string& what) const;
  const std::string& as_string(const std::string& what) const;
  bool as_bool(const std::string& what) const;
  const std::vector<JsonValue>& as_array(const std::string& what) const;
  // A member of an object; throws when this is not an object or the key is absent.
  const JsonValue& at(const std::string& key) const;
  // nullptr when absent (throws when this is not an object).
  const JsonValue* find(const std::string& key) const;

  // Throws "SOURCE:LINE: what: expected".
  [[noreturn]] void fail(const std::string& what, const std::string& expected) const;

 private:
  friend class JsonParser;
  Kind kind_ = Kind::kNull;
  int line_ = 1;
  bool boolean_ = false;
  double number_ = 0;
  std::string string_;
  std::vector<JsonValue> items_;
  std::vector<std::pair<std::string, JsonValue>> members_;
  std::shared_ptr<const std::string> source_;
};

}  // namespace xnn::predict
