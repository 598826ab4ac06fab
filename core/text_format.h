// Small text helpers shared by the text reports.
#pragma once

#include "core/trace_model.h"

#include <string>
#include <string_view>

namespace strata {

// printf into a std::string (up to 1 KiB). A string's width ("%12s", "%-40s") counts columns,
// not bytes: "830.1 µs" and "…_kernel" line up in text tables as ASCII does.
std::string strprintf(const char* format, ...) __attribute__((format(printf, 1, 2)));

// A duration as every front end shows it (the CLI's reports and the viewer's panels): four
// significant digits in the unit that suits it, "µs" for microseconds: "12.35 ms", "830.1 µs",
// "1.000 ms", "17 ns", "2.004 s"; whole nanoseconds below a microsecond ("0.25 ns" below one).
std::string format_duration(double ns);
inline std::string format_duration(Ns ns) { return format_duration(double(ns)); }
// A size in the binary unit that suits it, one decimal: "293.0 MiB", "12.5 KiB", "640 B".
std::string format_bytes(double bytes);
// Floating-point operations with a decimal prefix: "12.3 GFLOP".
std::string format_flops(double flops);
// `s` in exactly `width` columns of a text table (UTF-8 characters count one each): padded
// with spaces, or its end kept behind a leading "…" when it is wider.
std::string fit_column(std::string_view s, size_t width);
// `s` right-aligned in at least `width` columns (UTF-8 characters count one each, unlike
// printf's "%12s", which counts the two bytes of "µs" as two columns).
std::string right_column(std::string_view s, size_t width);

}  // namespace strata
