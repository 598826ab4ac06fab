// Nanoseconds as microsecond text with three decimals, the way Chrome / Kineto traces write
// timestamps and durations: 1234567 -> "1234.567", 5 -> "0.005", -1500 -> "-1.500".
#pragma once

#include <cstdint>
#include <string>

namespace strata {

void append_us(std::string& out, int64_t ns);  // exact for every int64_t
std::string us_text(int64_t ns);

}  // namespace strata
