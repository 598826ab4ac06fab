#include "core/json_writer.h"

#include <cmath>
#include <cstdio>

namespace strata {

JsonWriter& JsonWriter::value(double v) {
  if (!std::isfinite(v)) return raw("null");
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return raw(buf);
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
