#include "harness/predict/json_value.h"

#include <charconv>

#include "engine/core/error.h"

namespace xnn::predict {

class JsonParser {
 public:
  JsonParser(const std::string& text, std::shared_ptr<const std::string> source)
      : text_(text), source_(std::move(source)) {}

  JsonValue document() {
    JsonValue v = value(0);
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text after the JSON value");
    return v;
  }

 private:
  static constexpr int kMaxDepth = 64;

  JsonValue value(int depth) {
    if (depth > kMaxDepth) fail("nesting deeper than " + std::to_string(kMaxDepth));
    skip_space();
    JsonValue v;
    v.line_ = line_;
    v.source_ = source_;
    if (pos_ >= text_.size()) fail("expected a value, found the end of the file");
    const char c = text_[pos_];
    if (c == '{') {
      v.kind_ = JsonValue::Kind::kObject;
      ++pos_;
      skip_space();
      if (peek('}')) return v;
      for (;;) {
        skip_space();
        if (pos_ >= text_.size() || text_[pos_] != '"') fail("expected a quoted key");
        std::string key = string();
        skip_space();
        expect(':');
        v.members_.emplace_back(std::move(key), value(depth + 1));
        skip_space();
        if (peek('}')) return v;
        expect(',');
      }
    }
    if (c == '[') {
      v.kind_ = JsonValue::Kind::kArray;
      ++pos_;
      skip_space();
      if (peek(']')) return v;
      for (;;) {
        v.items_.push_back(value(depth + 1));
        skip_space();
        if (peek(']')) return v;
        expect(',');
      }
    }
    if (c == '"') {
      v.kind_ = JsonValue::Kind::kString;
      v.string_ = string();
      return v;
    }
    if (literal("true")) {
      v.kind_ = JsonValue::Kind::kBool;
      v.boolean_ = true;
      return v;
    }
    if (literal("false")) {
      v.kind_ = JsonValue::Kind::kBool;
      return v;
    }
    if (literal("null")) return v;
    v.kind_ = JsonValue::Kind::kNumber;
    v.number_ = number();
    return v;
  }

  double number() {
    const char* begin = text_.data() + pos_;
    const char* end = text_.data() + text_.size();
    double d = 0;
    const auto [ptr, ec] = std::from_chars(begin, end, d);
    if (ec != std::errc() || ptr == begin) fail("expected a value (object, array, string, number, true, false or null)");
    pos_ += static_cast<size_t>(ptr - begin);
    return d;
  }

  std::string string() {
    ++pos_;  // opening quote
    std::string out;
    while (pos_ < text_.size()) {
      const char c = text_[pos_++];
      if (c == '"') return out;
      if (c == '\n') fail("newline inside a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= text_.size()) break;
      const char e = text_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          if (pos_ + 4 > text_.size()) fail("truncated \\u escape");
          unsigned code = 0;
          const auto [ptr, ec] = std::from_chars(text_.data() + pos_, text_.data() + pos_ + 4, code, 16);
          if (ec != std::errc() || ptr != text_.data() + pos_ + 4) fail("bad \\u escape");
          pos_ += 4;
          // UTF-8 for the basic plane (surrogate pairs are not needed by our files).
          if (code < 0x80) {
            out += static_cast<char>(code);
          } else if (code < 0x800) {
            out += static_cast<char>(0xC0 | (code >> 6));
            out += static_cast<char>(0x80 | (code & 0x3F));
          } else {
            out += static_cast<char>(0xE0 | (code >> 12));
            out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (code & 0x3F));
          }
          break;
        }
        default: fail(std::string("unknown escape \\") + e);
      }
    }
    fail("unterminated string");
  }

  bool literal(const char* word) {
    const std::string w(word);
    if (text_.compare(pos_, w.size(), w) != 0) return false;
    pos_ += w.size();
    return true;
  }
  bool peek(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!peek(c)) fail(std::string("expected '") + c + "'");
  }
  void skip_space() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == '\n') {
        ++line_;
      } else if (c != ' ' && c != '\t' && c != '\r') {
        return;
      }
      ++pos_;
    }
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(*source_ + ":" + std::to_string(line_) + ": invalid JSON: " + what);
  }

  const std::string& text_;
  std::shared_ptr<const std::string> source_;
  size_t pos_ = 0;
  int line_ = 1;
};

JsonValue JsonValue::parse(const std::string& text, const std::string& source) {
  return JsonParser(text, std::make_shared<const std::string>(source)).document();
}

void JsonValue::fail(const std::string& what, const std::string& expected) const {
  throw Error((source_ ? *source_ : std::string("<json>")) + ":" + std::to_string(line_) + ": " + what + ": expected " +
              expected);
}

double JsonValue::as_number(const std::string& what) const {
  if (kind_ != Kind::kNumber) fail(what, "a number");
  return number_;
}
const std::string& JsonValue::as_string(const std::string& what) const {
  if (kind_ != Kind::kString) fail(what, "a string");
  return string_;
}
bool JsonValue::as_bool(const std::string& what) const {
  if (kind_ != Kind::kBool) fail(what, "true or false");
  return boolean_;
}
const std::vector<JsonValue>& JsonValue::as_array(const std::string& what) const {
  if (kind_ != Kind::kArray) fail(what, "an array");
  return items_;
}
const JsonValue* JsonValue::find(const std::string& key) const {
  if (kind_ != Kind::kObject) fail("\"" + key + "\"", "an object holding it");
  for (const auto& [k, v] : members_) {
    if (k == key) return &v;
  }
  return nullptr;
}
const JsonValue& JsonValue::at(const std::string& key) const {
  const JsonValue* v = find(key);
  if (!v) fail("missing key \"" + key + "\"", "it in this object");
  return *v;
}

}  // namespace xnn::predict
