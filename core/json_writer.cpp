#include "core/json_writer.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace strata {

JsonWriter& JsonWriter::value(double v) {
  if (!std::isfinite(v)) return raw("null");
  // The shortest text that reads back as the same double: timestamps in ns since the
  // epoch or boot need 13 to 19 digits.
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return raw(std::string_view(buf, size_t(r.ptr - buf)));
}

void JsonWriter::string_literal(std::string_view s) {
  out_ += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out_ += "\\\""; break;
      case '\\': out_ += "\\\\"; break;
      case '\n': out_ += "\\n"; break;
      case '\r': out_ += "\\r"; break;
      case '\t': out_ += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out_ += buf;
        } else {
          out_ += char(c);
        }
    }
  }
  out_ += '"';
}

}  // namespace strata
