// The control protocol's messages: one request line, one reply line, per connection.
//
//   request:  COMMAND [KEY=VALUE ...]\n         e.g. "start duration_ms=2000 output=/tmp/a.json"
//   reply:    ok [KEY=VALUE ...]\n  |  error message=TEXT\n
//
// Values are percent-encoded (%XX) where they hold a space, '%', '=', or a control byte.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::collector {

inline constexpr size_t kMaxMessageBytes = 4096;

struct Message {
  std::string verb;  // request: the command; reply: "ok" or "error"
  std::vector<std::pair<std::string, std::string>> fields;

  const std::string* get(std::string_view key) const;
  Message& set(std::string key, std::string value);
};

std::string encode_message(const Message& m);                 // with the trailing '\n'
// Parses one line (a trailing '\n' is allowed); nullopt with `error` set when malformed.
std::optional<Message> decode_message(std::string_view line, std::string* error);

// Error replies keep their text in field "message".
Message error_reply(std::string text);
bool is_error(const Message& reply);
std::string error_text(const Message& reply);

// Parses a non-negative integer field; nullopt when absent, `bad` set when present but invalid.
std::optional<uint64_t> get_uint(const Message& m, std::string_view key, bool* bad);

}  // namespace strata::collector
