// A minimal JSON writer for machine-readable CLI output (--json). Builds text directly; values
// are escaped per RFC 8259; doubles that are not finite are written as null.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace xnn::json {

inline std::string quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
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
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

inline std::string number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.10g", v);
  return buf;
}
inline std::string number(int64_t v) { return std::to_string(v); }

// Builds an object or array by appending members; comma handling is internal.
class Writer {
 public:
  Writer& begin_object() { return open('{'); }
  Writer& end_object() { return close('}'); }
  Writer& begin_array() { return open('['); }
  Writer& end_array() { return close(']'); }
  Writer& key(const std::string& k) {
    comma();
    out_ += quote(k) + ":";
    after_key_ = true;
    return *this;
  }
  Writer& value(const std::string& s) { return raw(quote(s)); }
  Writer& value(const char* s) { return raw(quote(s)); }
  Writer& value(double v) { return raw(number(v)); }
  Writer& value(int64_t v) { return raw(number(v)); }
  Writer& value(int v) { return raw(number(static_cast<int64_t>(v))); }
  Writer& value(size_t v) { return raw(number(static_cast<int64_t>(v))); }
  Writer& value(bool v) { return raw(v ? "true" : "false"); }
  Writer& value(const std::vector<int64_t>& v) {
    begin_array();
    for (int64_t x : v) value(x);
    return end_array();
  }
  Writer& null() { return raw("null"); }
  template <typename T>
  Writer& field(const std::string& k, const T& v) {
    key(k);
    return value(v);
  }
  Writer& raw(const std::string& text) {
    comma();
    out_ += text;
    return *this;
  }
  const std::string& str() const { return out_; }

 private:
  Writer& open(char c) {
    comma();
    out_ += c;
    first_.push_back(true);
    return *this;
  }
  Writer& close(char c) {
    out_ += c;
    first_.pop_back();
    return *this;
  }
  void comma() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_.empty()) {
      if (!first_.back()) out_ += ",";
      first_.back() = false;
    }
  }
  std::string out_;
  std::vector<bool> first_;
  bool after_key_ = false;
};

}  // namespace xnn::json
