#include "core/base/us_text.h"

#include <charconv>

namespace strata {

void append_us(std::string& out, int64_t ns) {
  uint64_t magnitude = static_cast<uint64_t>(ns);
  if (ns < 0) {
    out += '-';
    magnitude = ~magnitude + 1;  // also right for INT64_MIN
  }
  char buf[24];
  const auto res = std::to_chars(buf, buf + sizeof buf, magnitude / 1000);
  out.append(buf, res.ptr);
  const auto frac = static_cast<unsigned>(magnitude % 1000);
  out += '.';
  out += static_cast<char>('0' + frac / 100);
  out += static_cast<char>('0' + frac / 10 % 10);
  out += static_cast<char>('0' + frac % 10);
}

std::string us_text(int64_t ns) {
  std::string out;
  append_us(out, ns);
  return out;
}

}  // namespace strata
