// Small text helpers shared by the text reports.
#pragma once

#include "core/trace_model.h"

#include <string>
#include <string_view>

namespace strata {

// printf into a std::string (up to 1 KiB).
std::string strprintf(const char* format, ...) __attribute__((format(printf, 1, 2)));

// A duration with a unit that keeps 3-4 significant digits: "12.345 ms", "830.1 us", "17 ns".
std::string format_duration(Ns ns);
// A size in the binary unit that suits it, one decimal: "293.0 MiB", "12.5 KiB", "640 B".
std::string format_bytes(double bytes);
// Floating-point operations with a decimal prefix: "12.3 GFLOP".
std::string format_flops(double flops);
// `s` in exactly `width` columns of a text table (UTF-8 characters count one each): padded
// with spaces, or its end kept behind a leading "…" when it is wider.
std::string fit_column(std::string_view s, size_t width);

}  // namespace strata
