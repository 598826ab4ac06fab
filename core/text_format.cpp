#include "core/text_format.h"

#include <cinttypes>
#include <cstdarg>
#include <cstdio>

namespace strata {

std::string strprintf(const char* format, ...) {
  char buf[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return buf;
}

std::string format_duration(Ns ns) {
  double v = double(ns);
  Ns mag = ns < 0 ? -ns : ns;
  if (mag >= 1'000'000'000) return strprintf("%.3f s", v / 1e9);
  if (mag >= 1'000'000) return strprintf("%.3f ms", v / 1e6);
  if (mag >= 1'000) return strprintf("%.1f us", v / 1e3);
  return strprintf("%" PRId64 " ns", ns);
}

}  // namespace strata
