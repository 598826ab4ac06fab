// Small, allocation-free JSON scanning used around simdjson: finding where a value ends
// (to cut the event array into chunks and to give each event its byte range), exact
// microsecond→nanosecond conversion, string unescaping and UTF-8 repair.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace strata::json {

inline bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

inline size_t skip_ws(const char* p, size_t i, size_t n) {
  while (i < n && is_ws(p[i])) ++i;
  return i;
}

enum class ScanError { None, Truncated, Malformed };

// p[i] starts a value; returns one past its end in `end`. Objects and arrays are matched
// with a depth counter (no recursion, so any nesting depth is fine).
ScanError value_end(const char* p, size_t i, size_t n, size_t& end);

// Finds the first `{` at or after `from` that follows `}` `,` (with whitespace): a likely
// start of an event inside the traceEvents array. Returns n when there is none.
size_t next_event_start(const char* p, size_t from, size_t n);

// A JSON number in microseconds → integer nanoseconds, exact for up to 3 fractional digits
// (more are rounded). False for non-numbers, NaN/Infinity, and values beyond ±9.2e15 µs (int64 ns).
bool micros_to_ns(std::string_view token, int64_t& ns);

// A JSON integer (no fraction); false when not an integer or out of int64 range.
bool parse_int(std::string_view token, int64_t& v);

// Trims whitespace after a raw token.
inline std::string_view trim_token(std::string_view t) {
  while (!t.empty() && is_ws(t.back())) t.remove_suffix(1);
  return t;
}

// `raw` is the inside of a JSON string (no quotes) that contains a backslash; appends the
// unescaped UTF-8 to `out`. False on a malformed escape.
bool unescape(std::string_view raw, std::string& out);

// Replaces bytes that are not valid UTF-8 with '?'; returns how many were replaced.
size_t repair_utf8(char* p, size_t n);

}  // namespace strata::json
