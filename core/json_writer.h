// A minimal streaming JSON writer for reports (commas and escaping handled here).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace strata {

class JsonWriter {
 public:
  JsonWriter& begin_object() { return open('{'); }
  JsonWriter& end_object() { return close('}'); }
  JsonWriter& begin_array() { return open('['); }
  JsonWriter& end_array() { return close(']'); }
  JsonWriter& key(std::string_view k) {
    comma();
    string_literal(k);
    out_ += ':';
    after_key_ = true;
    return *this;
  }
  JsonWriter& value(std::string_view s) {
    comma();
    string_literal(s);
    return *this;
  }
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(int64_t v) { return raw(std::to_string(v)); }
  JsonWriter& value(uint64_t v) { return raw(std::to_string(v)); }
  JsonWriter& value(int v) { return raw(std::to_string(v)); }
  JsonWriter& value(unsigned v) { return raw(std::to_string(v)); }
  JsonWriter& value(double v);
  JsonWriter& value(bool v) { return raw(v ? "true" : "false"); }
  JsonWriter& value(std::nullptr_t) { return raw("null"); }
  template <class T>
  JsonWriter& field(std::string_view k, T v) {
    key(k);
    return value(v);
  }
  const std::string& str() const { return out_; }

 private:
  JsonWriter& raw(std::string_view s) {
    comma();
    out_ += s;
    return *this;
  }
  JsonWriter& open(char c) {
    comma();
    out_ += c;
    first_ = true;
    return *this;
  }
  JsonWriter& close(char c) {
    out_ += c;
    first_ = false;
    return *this;
  }
  void comma() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_ && !out_.empty()) out_ += ',';
    first_ = false;
  }
  void string_literal(std::string_view s);
  std::string out_;
  bool first_ = true, after_key_ = false;
};

}  // namespace strata
