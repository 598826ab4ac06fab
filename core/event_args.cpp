// Reading an event's arguments from its JSON.
#include "core/event_args.h"

#include <charconv>
#include <string>

namespace strata {

std::string_view arg_text(std::string_view src, std::string_view key) {
  std::string quoted = "\"" + std::string(key) + "\"";
  size_t p = src.find(quoted);
  if (p == std::string_view::npos) return {};
  p = src.find(':', p + quoted.size());
  if (p == std::string_view::npos) return {};
  ++p;
  while (p < src.size() && (src[p] == ' ' || src[p] == '\t' || src[p] == '\n' || src[p] == '\r')) ++p;
  if (p >= src.size()) return {};
  if (src[p] == '"') {
    size_t e = src.find('"', p + 1);
    return e == std::string_view::npos ? std::string_view() : src.substr(p + 1, e - p - 1);
  }
  size_t e = p;
  while (e < src.size() && src[e] != ',' && src[e] != '}' && src[e] != ']') ++e;
  return src.substr(p, e - p);
}

int64_t arg_int(std::string_view src, std::string_view key) {
  std::string_view t = arg_text(src, key);
  int64_t v = -1;
  auto r = std::from_chars(t.data(), t.data() + t.size(), v);
  return r.ec == std::errc() ? v : -1;
}

}  // namespace strata
