#include "engine/core/json.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "engine/core/error.h"

namespace xnn::json {

Value Value::boolean(bool b) {
  Value v;
  v.kind_ = Kind::kBool;
  v.bool_ = b;
  return v;
}
Value Value::integer(int64_t i) {
  Value v;
  v.kind_ = Kind::kInt;
  v.int_ = i;
  return v;
}
Value Value::real(double d) {
  Value v;
  v.kind_ = Kind::kDouble;
  v.double_ = d;
  return v;
}
Value Value::string(std::string s) {
  Value v;
  v.kind_ = Kind::kString;
  v.string_ = std::move(s);
  return v;
}
Value Value::array() {
  Value v;
  v.kind_ = Kind::kArray;
  return v;
}
Value Value::object() {
  Value v;
  v.kind_ = Kind::kObject;
  return v;
}

std::string_view kind_name(Value::Kind kind) {
  switch (kind) {
    case Value::Kind::kNull: return "null";
    case Value::Kind::kBool: return "a boolean";
    case Value::Kind::kInt: return "an integer";
    case Value::Kind::kDouble: return "a number";
    case Value::Kind::kString: return "a string";
    case Value::Kind::kArray: return "an array";
    case Value::Kind::kObject: return "an object";
  }
  return "?";
}

namespace {
[[noreturn]] void wrong_kind(std::string_view expected, Value::Kind got) {
  throw Error("expected " + std::string(expected) + ", got " + std::string(kind_name(got)));
}
}  // namespace

bool Value::as_bool() const {
  if (kind_ != Kind::kBool) wrong_kind("a boolean", kind_);
  return bool_;
}
int64_t Value::as_int() const {
  if (kind_ != Kind::kInt) wrong_kind("an integer", kind_);
  return int_;
}
double Value::as_double() const {
  if (kind_ == Kind::kInt) return static_cast<double>(int_);
  if (kind_ != Kind::kDouble) wrong_kind("a number", kind_);
  return double_;
}
const std::string& Value::as_string() const {
  if (kind_ != Kind::kString) wrong_kind("a string", kind_);
  return string_;
}
const std::vector<Value>& Value::items() const {
  if (kind_ != Kind::kArray) wrong_kind("an array", kind_);
  return items_;
}
const std::vector<std::pair<std::string, Value>>& Value::members() const {
  if (kind_ != Kind::kObject) wrong_kind("an object", kind_);
  return members_;
}

const Value* Value::find(std::string_view key) const {
  for (const auto& [k, v] : members()) {
    if (k == key) return &v;
  }
  return nullptr;
}

void Value::fail(const std::string& what, const std::string& expected) const {
  throw Error(std::to_string(line_) + ": " + what + ": expected " + expected);
}
double Value::number(const std::string& what) const {
  if (!is_number()) fail(what, "a number");
  return as_double();
}
const std::string& Value::text(const std::string& what) const {
  if (kind_ != Kind::kString) fail(what, "a string");
  return string_;
}
bool Value::flag(const std::string& what) const {
  if (kind_ != Kind::kBool) fail(what, "true or false");
  return bool_;
}
const std::vector<Value>& Value::list(const std::string& what) const {
  if (kind_ != Kind::kArray) fail(what, "an array");
  return items_;
}
const Value& Value::at(const std::string& key) const {
  if (kind_ != Kind::kObject) fail("\"" + key + "\"", "an object holding it");
  const Value* v = find(key);
  if (!v) fail("missing key \"" + key + "\"", "it in this object");
  return *v;
}

Value& Value::push(Value v) {
  if (kind_ != Kind::kArray) wrong_kind("an array", kind_);
  items_.push_back(std::move(v));
  return *this;
}

Value& Value::set(const std::string& key, Value v) {
  if (kind_ != Kind::kObject) wrong_kind("an object", kind_);
  for (auto& [k, old] : members_) {
    if (k == key) {
      old = std::move(v);
      return *this;
    }
  }
  members_.emplace_back(key, std::move(v));
  return *this;
}

// ---------------------------------------------------------------------------------------------
// Parser

namespace {

// Deep nesting would recurse without bound on hostile input; manifests nest 4 levels.
constexpr int kMaxDepth = 64;

class Parser {
 public:
  Parser(std::string_view text, const std::string& name) : s_(text), name_(name) {}

  Value document() {
    skip_space();
    Value v = value(0);
    skip_space();
    if (pos_ != s_.size()) fail("unexpected bytes after the JSON value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(name_ + ": JSON error at byte " + std::to_string(pos_) + ": " + what);
  }
  bool at_end() const { return pos_ >= s_.size(); }
  char peek() const { return at_end() ? '\0' : s_[pos_]; }
  void skip_space() {
    while (!at_end() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  void expect_literal(std::string_view lit) {
    if (s_.substr(pos_, lit.size()) != lit) fail("invalid literal (expected '" + std::string(lit) + "')");
    pos_ += lit.size();
  }

  // The line of pos_, counted incrementally (values start at increasing positions).
  int line_here() {
    for (; counted_ < pos_ && counted_ < s_.size(); ++counted_) line_ += s_[counted_] == '\n';
    return line_;
  }

  Value value(int depth) {
    const int line = line_here();
    Value v = parse_value(depth);
    v.set_line(line);
    return v;
  }

  Value parse_value(int depth) {
    if (depth > kMaxDepth) fail("nesting deeper than " + std::to_string(kMaxDepth) + " levels");
    if (at_end()) fail("unexpected end of document (truncated?)");
    switch (peek()) {
      case '{': return object(depth);
      case '[': return array(depth);
      case '"': return Value::string(string());
      case 't': expect_literal("true"); return Value::boolean(true);
      case 'f': expect_literal("false"); return Value::boolean(false);
      case 'n': expect_literal("null"); return Value();
      default:
        if (peek() == '-' || (peek() >= '0' && peek() <= '9')) return number();
        fail(std::string("unexpected character '") + printable(peek()) + "'");
    }
  }

  static std::string printable(char c) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) return std::string(1, c);
    char buf[8];
    std::snprintf(buf, sizeof(buf), "\\x%02x", u);
    return buf;
  }

  Value object(int depth) {
    ++pos_;  // '{'
    Value obj = Value::object();
    skip_space();
    if (peek() == '}') {
      ++pos_;
      return obj;
    }
    while (true) {
      skip_space();
      if (peek() != '"') fail(at_end() ? "unexpected end of document (truncated?)" : "expected a string key");
      const size_t key_pos = pos_;
      std::string key = string();
      if (obj.find(key)) {
        pos_ = key_pos;
        fail("duplicate key '" + key + "'");
      }
      skip_space();
      if (peek() != ':') fail(at_end() ? "unexpected end of document (truncated?)" : "expected ':' after a key");
      ++pos_;
      skip_space();
      obj.set(key, value(depth + 1));
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == '}') {
        ++pos_;
        return obj;
      }
      fail(at_end() ? "unexpected end of document (truncated?)" : "expected ',' or '}' in an object");
    }
  }

  Value array(int depth) {
    ++pos_;  // '['
    Value arr = Value::array();
    skip_space();
    if (peek() == ']') {
      ++pos_;
      return arr;
    }
    while (true) {
      skip_space();
      arr.push(value(depth + 1));
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == ']') {
        ++pos_;
        return arr;
      }
      fail(at_end() ? "unexpected end of document (truncated?)" : "expected ',' or ']' in an array");
    }
  }

  Value number() {
    const size_t start = pos_;
    bool integral = true;
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
      if (peek() >= '0' && peek() <= '9') fail("leading zeros are not allowed in numbers");
    } else if (peek() >= '1' && peek() <= '9') {
      while (peek() >= '0' && peek() <= '9') ++pos_;
    } else {
      fail("expected a digit");
    }
    if (peek() == '.') {
      integral = false;
      ++pos_;
      if (!(peek() >= '0' && peek() <= '9')) fail("expected a digit after '.'");
      while (peek() >= '0' && peek() <= '9') ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      integral = false;
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!(peek() >= '0' && peek() <= '9')) fail("expected a digit in the exponent");
      while (peek() >= '0' && peek() <= '9') ++pos_;
    }
    const char* b = s_.data() + start;
    const char* e = s_.data() + pos_;
    if (integral) {
      int64_t v = 0;
      const auto r = std::from_chars(b, e, v);
      if (r.ec != std::errc() || r.ptr != e) {
        pos_ = start;
        fail("integer out of the 64-bit range");
      }
      return Value::integer(v);
    }
    double d = 0;
    const auto r = std::from_chars(b, e, d);
    if (r.ec != std::errc() || r.ptr != e || !std::isfinite(d)) {
      pos_ = start;
      fail("number out of range");
    }
    return Value::real(d);
  }

  unsigned hex4() {
    if (pos_ + 4 > s_.size()) fail("unexpected end of document (truncated?)");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = s_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f') v |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= static_cast<unsigned>(c - 'A' + 10);
      else fail("expected 4 hex digits after \\u");
    }
    return v;
  }

  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xc0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xe0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }

  // Length of the valid UTF-8 sequence at pos_ (shortest form, no surrogates), else 0.
  size_t utf8_length() const {
    const auto c = [&](size_t i) { return pos_ + i < s_.size() ? static_cast<unsigned char>(s_[pos_ + i]) : 0u; };
    const auto cont = [&](size_t i) { return (c(i) & 0xc0) == 0x80; };
    const unsigned b0 = c(0);
    if (b0 >= 0xc2 && b0 <= 0xdf) return cont(1) ? 2 : 0;
    if (b0 >= 0xe0 && b0 <= 0xef) {
      if (!cont(1) || !cont(2)) return 0;
      if (b0 == 0xe0 && c(1) < 0xa0) return 0;   // overlong
      if (b0 == 0xed && c(1) >= 0xa0) return 0;  // surrogate
      return 3;
    }
    if (b0 >= 0xf0 && b0 <= 0xf4) {
      if (!cont(1) || !cont(2) || !cont(3)) return 0;
      if (b0 == 0xf0 && c(1) < 0x90) return 0;   // overlong
      if (b0 == 0xf4 && c(1) >= 0x90) return 0;  // above U+10FFFF
      return 4;
    }
    return 0;
  }

  std::string string() {
    ++pos_;  // '"'
    std::string out;
    while (true) {
      if (at_end()) fail("unterminated string (truncated?)");
      const auto c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c < 0x20) fail("control character in a string (must be escaped)");
      if (c == '\\') {
        ++pos_;
        if (at_end()) fail("unterminated string (truncated?)");
        const char e = s_[pos_++];
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
            unsigned cp = hex4();
            if (cp >= 0xd800 && cp <= 0xdbff) {
              if (s_.substr(pos_, 2) != "\\u") fail("unpaired UTF-16 surrogate in \\u escape");
              pos_ += 2;
              const unsigned lo = hex4();
              if (lo < 0xdc00 || lo > 0xdfff) fail("unpaired UTF-16 surrogate in \\u escape");
              cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            } else if (cp >= 0xdc00 && cp <= 0xdfff) {
              fail("unpaired UTF-16 surrogate in \\u escape");
            }
            append_utf8(out, cp);
            break;
          }
          default: --pos_; fail("invalid escape '\\" + printable(e) + "'");
        }
        continue;
      }
      if (c < 0x80) {
        out += static_cast<char>(c);
        ++pos_;
        continue;
      }
      const size_t n = utf8_length();
      if (n == 0) fail("invalid UTF-8 in a string");
      out.append(s_.substr(pos_, n));
      pos_ += n;
    }
  }

  std::string_view s_;
  const std::string& name_;
  size_t pos_ = 0;
  size_t counted_ = 0;  // newlines before this position are counted in line_
  int line_ = 1;
};

// ---------------------------------------------------------------------------------------------
// Writer

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

void write(const Value& v, int indent, int level, std::string& out) {
  const auto newline = [&](int l) {
    if (indent < 0) return;
    out += '\n';
    out.append(static_cast<size_t>(indent * l), ' ');
  };
  switch (v.kind()) {
    case Value::Kind::kNull: out += "null"; return;
    case Value::Kind::kBool: out += v.as_bool() ? "true" : "false"; return;
    case Value::Kind::kInt: out += std::to_string(v.as_int()); return;
    case Value::Kind::kDouble: {
      const double d = v.as_double();
      if (!std::isfinite(d)) throw Error("JSON cannot represent a non-finite number");
      char buf[64];
      const auto r = std::to_chars(buf, buf + sizeof(buf), d);
      std::string s(buf, r.ptr);
      // Keep it a JSON number that reads back as a double, not an integer.
      if (s.find_first_of(".eE") == std::string::npos) s += ".0";
      out += s;
      return;
    }
    case Value::Kind::kString: out += quote(v.as_string()); return;
    case Value::Kind::kArray: {
      if (v.items().empty()) {
        out += "[]";
        return;
      }
      out += '[';
      bool first = true;
      for (const Value& item : v.items()) {
        if (!first) out += ',';
        first = false;
        newline(level + 1);
        write(item, indent, level + 1, out);
      }
      newline(level);
      out += ']';
      return;
    }
    case Value::Kind::kObject: {
      if (v.members().empty()) {
        out += "{}";
        return;
      }
      out += '{';
      bool first = true;
      for (const auto& [k, item] : v.members()) {
        if (!first) out += ',';
        first = false;
        newline(level + 1);
        out += quote(k);
        out += indent < 0 ? ":" : ": ";
        write(item, indent, level + 1, out);
      }
      newline(level);
      out += '}';
      return;
    }
  }
}

}  // namespace

Value parse(std::string_view text, const std::string& name) { return Parser(text, name).document(); }

std::string dump(const Value& v, int indent) {
  std::string out;
  write(v, indent, 0, out);
  return out;
}

}  // namespace xnn::json
