#include "core/text_format.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>

namespace strata {

namespace {

size_t utf8_columns(std::string_view s) {
  size_t n = 0;
  for (unsigned char ch : s) n += (ch & 0xC0) != 0x80;
  return n;
}

// `format` with the width of each "%Ns" whose string has characters of more than one byte
// ("µs", "…") widened by those extra bytes, so that widths count columns as a text table
// needs; empty when nothing changes. Walks `args` (the caller's copy) conversion by
// conversion; widths given with '*' are left as they are.
std::string widen_string_widths(const char* format, va_list args) {
  std::string out;
  const char* copied = format;  // out holds format up to here, rewritten
  for (const char* p = format; *p; ++p) {
    if (*p != '%') continue;
    ++p;
    if (!*p) break;
    if (*p == '%') continue;
    while (*p && std::strchr("-+ #0'", *p)) ++p;
    const char* width_begin = p;
    long width = -1;
    if (*p == '*') {
      (void)va_arg(args, int);
      ++p;
    } else if (std::isdigit(static_cast<unsigned char>(*p))) {
      width = std::strtol(p, const_cast<char**>(&p), 10);
    }
    const char* width_end = p;
    long precision = -1;
    if (*p == '.') {
      ++p;
      if (*p == '*') {
        precision = va_arg(args, int);
        ++p;
      } else {
        precision = std::strtol(p, const_cast<char**>(&p), 10);
      }
    }
    // Length modifiers: hh h l ll j z t L.
    char length = 0;
    while (*p && std::strchr("hljztL", *p)) length = *p == 'l' && length == 'l' ? 'q' : *p, ++p;
    switch (*p) {
      case 'd': case 'i': case 'c': case 'u': case 'x': case 'X': case 'o':
        if (length == 'q') (void)va_arg(args, long long);
        else if (length == 'l') (void)va_arg(args, long);
        else if (length == 'j') (void)va_arg(args, intmax_t);
        else if (length == 'z') (void)va_arg(args, size_t);
        else if (length == 't') (void)va_arg(args, ptrdiff_t);
        else (void)va_arg(args, int);
        break;
      case 'f': case 'F': case 'e': case 'E': case 'g': case 'G': case 'a': case 'A':
        if (length == 'L') (void)va_arg(args, long double);
        else (void)va_arg(args, double);
        break;
      case 'p': case 'n':
        (void)va_arg(args, void*);
        break;
      case 's': {
        if (length == 'l') {
          (void)va_arg(args, void*);
          break;
        }
        const char* str = va_arg(args, const char*);
        if (width <= 0 || !str) break;
        const std::string_view shown(str, precision >= 0 ? strnlen(str, size_t(precision)) : std::strlen(str));
        const size_t extra = shown.size() - utf8_columns(shown);
        if (extra == 0) break;
        out.append(copied, width_begin);
        out += std::to_string(width + long(extra));
        copied = width_end;
        break;
      }
      default:
        break;
    }
    if (!*p) break;
  }
  if (copied == format) return {};
  return out + copied;
}

}  // namespace

std::string strprintf(const char* format, ...) {
  char buf[1024];
  va_list args, scan;
  va_start(args, format);
  va_copy(scan, args);
  const std::string widened = widen_string_widths(format, scan);
  va_end(scan);
  std::vsnprintf(buf, sizeof buf, widened.empty() ? format : widened.c_str(), args);
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

std::string format_duration(double ns) {
  struct Unit {
    double scale;
    const char* name;
  };
  static constexpr Unit kUnits[] = {{1, "ns"}, {1e3, "\xC2\xB5s"}, {1e6, "ms"}, {1e9, "s"}};  // µs
  if (std::isnan(ns)) return "- ns";
  const double a = std::fabs(ns);
  if (a < 1) return a == 0 ? std::string("0 ns") : strprintf("%.2f ns", ns);
  // Decimals for four significant digits (whole nanoseconds), from the value as it will be
  // rounded: 9.9996 ms is "10.00 ms", and 999.96 µs moves up a unit to "1.000 ms".
  auto decimals_for = [](size_t unit, double v) { return unit == 0 ? 0 : v >= 1000 ? 0 : v >= 100 ? 1 : v >= 10 ? 2 : 3; };
  auto rounded = [](double v, int decimals) {
    const double p = std::pow(10.0, decimals);
    return std::round(v * p) / p;
  };
  size_t u = a >= 1e9 ? 3 : a >= 1e6 ? 2 : a >= 1e3 ? 1 : 0;
  for (;;) {
    const double v = a / kUnits[u].scale;
    int decimals = decimals_for(u, v);
    const double r = rounded(v, decimals);
    if (r >= 1000 && u + 1 < std::size(kUnits)) {
      ++u;
      continue;
    }
    decimals = std::min(decimals, decimals_for(u, r));
    return strprintf("%.*f %s", decimals, ns / kUnits[u].scale, kUnits[u].name);
  }
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

std::string right_column(std::string_view s, size_t width) {
  const size_t cols = utf8_columns(s);
  return cols >= width ? std::string(s) : std::string(width - cols, ' ') + std::string(s);
}

}  // namespace strata
