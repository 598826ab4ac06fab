#include "message.h"

#include <charconv>

namespace strata::collector {

namespace {

bool needs_escape(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u <= 0x20 || u == 0x7f || c == '%' || c == '=';
}

void append_escaped(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (char c : s) {
    if (!needs_escape(c)) {
      out += c;
      continue;
    }
    const auto u = static_cast<unsigned char>(c);
    out += '%';
    out += kHex[u >> 4];
    out += kHex[u & 15];
  }
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<std::string> unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size()) return std::nullopt;
    const int hi = hex_value(s[i + 1]);
    const int lo = hex_value(s[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

// Each escaped byte takes three.
size_t escaped_size(char c) { return needs_escape(c) ? 3 : 1; }

bool valid_word(std::string_view w) {
  if (w.empty() || w.size() > 64) return false;
  for (char c : w)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

}  // namespace

const std::string* Message::get(std::string_view key) const {
  for (const auto& [k, v] : fields)
    if (k == key) return &v;
  return nullptr;
}

Message& Message::set(std::string key, std::string value) {
  for (auto& [k, v] : fields)
    if (k == key) {
      v = std::move(value);
      return *this;
    }
  fields.emplace_back(std::move(key), std::move(value));
  return *this;
}

std::string encode_message(const Message& m) {
  std::string out = m.verb;
  for (const auto& [k, v] : m.fields) {
    out += ' ';
    out += k;
    out += '=';
    append_escaped(out, v);
  }
  out += '\n';
  return out;
}

size_t encoded_size(std::string_view value) {
  size_t n = 0;
  for (char c : value) n += escaped_size(c);
  return n;
}

std::string fit_value(std::string_view value, size_t max_bytes) {
  size_t n = 0, cut = 0;
  while (cut < value.size() && n + escaped_size(value[cut]) <= max_bytes) n += escaped_size(value[cut++]);
  while (cut > 0 && cut < value.size() && (static_cast<unsigned char>(value[cut]) & 0xc0) == 0x80) --cut;
  return std::string(value.substr(0, cut));
}

Result<Message> decode_message(std::string_view line) {
  auto fail = [](std::string why) { return Status::invalid(std::move(why)); };
  if (line.size() > kMaxMessageBytes) return fail("message longer than " + std::to_string(kMaxMessageBytes) + " bytes");
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.find('\n') != std::string_view::npos) return fail("more than one line");
  for (char c : line)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return fail("raw control byte in the message (values are %-escaped)");
  Message m;
  size_t pos = 0;
  bool first = true;
  while (pos <= line.size()) {
    size_t end = line.find(' ', pos);
    if (end == std::string_view::npos) end = line.size();
    const std::string_view word = line.substr(pos, end - pos);
    pos = end + 1;
    if (word.empty()) {
      if (end == line.size()) break;
      return fail("empty word (double space)");
    }
    if (first) {
      if (!valid_word(word)) return fail("bad command word");
      m.verb = word;
      first = false;
      continue;
    }
    const size_t eq = word.find('=');
    if (eq == std::string_view::npos) return fail("expected KEY=VALUE, got '" + std::string(word.substr(0, 40)) + "'");
    const std::string_view key = word.substr(0, eq);
    if (!valid_word(key)) return fail("bad key");
    auto value = unescape(word.substr(eq + 1));
    if (!value) return fail("bad %-escape in value of " + std::string(key));
    if (value->find('\0') != std::string::npos) return fail("NUL byte in value of " + std::string(key));
    if (m.get(key) != nullptr) return fail("duplicate key " + std::string(key));
    m.fields.emplace_back(std::string(key), std::move(*value));
  }
  if (first) return fail("empty message");
  return m;
}

Status check_keys(const Message& m, std::initializer_list<std::string_view> allowed) {
  for (const auto& [key, value] : m.fields) {
    bool known = false;
    for (std::string_view a : allowed) known = known || a == key;
    if (known) continue;
    std::string list;
    for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    return Status::invalid("unknown key '" + key + "' for " + m.verb + (list.empty() ? " (it takes none)" : " (" + list + ")"));
  }
  return Status::ok();
}

Message error_reply(std::string text) {
  Message m;
  m.verb = "error";
  m.set("message", fit_value(text));
  return m;
}

bool is_error(const Message& reply) { return reply.verb != "ok"; }

std::string error_text(const Message& reply) {
  if (const std::string* t = reply.get("message")) return *t;
  return reply.verb == "ok" ? std::string() : "malformed reply";
}

std::optional<uint64_t> get_uint(const Message& m, std::string_view key, bool* bad) {
  const std::string* v = m.get(key);
  if (v == nullptr) return std::nullopt;
  uint64_t out = 0;
  auto res = std::from_chars(v->data(), v->data() + v->size(), out);
  if (res.ec != std::errc() || res.ptr != v->data() + v->size() || v->empty()) {
    if (bad != nullptr) *bad = true;
    return std::nullopt;
  }
  return out;
}

}  // namespace strata::collector
