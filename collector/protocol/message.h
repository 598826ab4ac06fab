// The control protocol's messages: one request line, one reply line, per connection.
//
//   request:  COMMAND [KEY=VALUE ...]\n         e.g. "start duration_ms=2000 output=/tmp/a.json"
//   reply:    ok [KEY=VALUE ...]\n  |  error message=TEXT\n
//
// Values are percent-encoded (%XX) where they hold a space, '%', '=', or a control byte.
// A line may end in "\r\n"; a NUL byte in a value is refused (C strings would cut it).
#pragma once

#include "core/base/status.h"

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::collector {

inline constexpr size_t kMaxMessageBytes = 4096;

// Bounds of a start request, checked by the agent and by the client's options.
inline constexpr uint64_t kMaxDurationMs = uint64_t{7} * 24 * 3600 * 1000;  // a week
inline constexpr uint64_t kMaxDelayMs = kMaxDurationMs;
inline constexpr uint64_t kMaxIterations = 1000000;
// Encoded bytes of the values a status reply carries, so the longest one fits in a line.
inline constexpr size_t kMaxOutputBytes = 1024;   // the output path (a longer one is refused)
inline constexpr size_t kMaxTextBytes = 512;      // command, GPU names, error texts (cut)

struct Message {
  std::string verb;  // request: the command; reply: "ok" or "error"
  std::vector<std::pair<std::string, std::string>> fields;

  const std::string* get(std::string_view key) const;
  Message& set(std::string key, std::string value);
};

std::string encode_message(const Message& m);                 // with the trailing '\n'
size_t encoded_size(std::string_view value);                  // of a value, %-escaped
// The longest prefix of `value` whose encoding fits in `max_bytes`, cut at a UTF-8 boundary.
std::string fit_value(std::string_view value, size_t max_bytes = kMaxTextBytes);
// Parses one line (a trailing '\n' is allowed); Invalid, saying why, when malformed.
Result<Message> decode_message(std::string_view line);

// Refuses keys other than `allowed` (Invalid), naming the first unknown one.
Status check_keys(const Message& m, std::initializer_list<std::string_view> allowed);

// Error replies keep their text, cut to kMaxTextBytes encoded, in field "message".
Message error_reply(std::string text);
bool is_error(const Message& reply);
std::string error_text(const Message& reply);

// Parses a non-negative integer field; nullopt when absent, `bad` set when present but invalid.
std::optional<uint64_t> get_uint(const Message& m, std::string_view key, bool* bad);

}  // namespace strata::collector
