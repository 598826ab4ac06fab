#include "core/json_writer.h"

#include "core/base/json_escape.h"

#include <charconv>
#include <cmath>

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
  append_json_escaped(out_, s);
  out_ += '"';
}

}  // namespace strata
