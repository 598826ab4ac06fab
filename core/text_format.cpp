#include "core/text_format.h"

#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <iterator>

namespace strata {

std::string strprintf(const char* format, ...) {
  char buf[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return buf;
}

std::string format_bytes(double b) {
  double a = b < 0 ? -b : b;
  if (a >= double(1ull << 30)) return strprintf("%.1f GiB", b / double(1ull << 30));
  if (a >= double(1ull << 20)) return strprintf("%.1f MiB", b / double(1ull << 20));
  if (a >= 1024) return strprintf("%.1f KiB", b / 1024);
  return strprintf("%.0f B", b);
}

std::string format_flops(double f) {
  static constexpr const char* kPrefix[] = {"", "k", "M", "G", "T", "P", "E"};
  size_t i = 0;
  while (i + 1 < std::size(kPrefix) && f >= 1000) {
    f /= 1000;
    ++i;
  }
  return strprintf(i ? "%.2f %sFLOP" : "%.0f %sFLOP", f, kPrefix[i]);
}

std::string format_duration(Ns ns) {
  double v = double(ns);
  Ns mag = ns < 0 ? -ns : ns;
  if (mag >= 1'000'000'000) return strprintf("%.3f s", v / 1e9);
  if (mag >= 1'000'000) return strprintf("%.3f ms", v / 1e6);
  if (mag >= 1'000) return strprintf("%.1f us", v / 1e3);
  return strprintf("%" PRId64 " ns", ns);
}

std::string fit_column(std::string_view s, size_t width) {
  auto columns = [](std::string_view x) {
    size_t n = 0;
    for (unsigned char ch : x) n += (ch & 0xC0) != 0x80;
    return n;
  };
  size_t cols = columns(s);
  if (cols > width && width > 0) {
    // Drop characters from the front until the rest and "…" fit.
    size_t drop = cols - (width - 1), i = 0;
    while (drop > 0 && i < s.size()) {
      ++i;
      while (i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) ++i;
      --drop;
    }
    return "\xE2\x80\xA6" + std::string(s.substr(i));
  }
  return std::string(s) + std::string(width - cols, ' ');
}

}  // namespace strata
