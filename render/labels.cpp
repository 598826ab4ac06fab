#include "render/labels.h"

namespace strata::render {

FontMetrics FontMetrics::monospace(float advance, float height) {
  FontMetrics f;
  for (float& a : f.advance) a = advance;
  f.other = advance;
  f.ellipsis = advance;
  f.height = height;
  return f;
}

float FontMetrics::width(std::string_view s) const {
  float w = 0;
  for (unsigned char ch : s) {
    if (ch < 128) w += advance[ch];
    else if ((ch & 0xC0) != 0x80) w += other;  // count a UTF-8 sequence once, at its lead byte
  }
  return w;
}

FittedLabel fit_label(std::string_view text, float max_px, const FontMetrics& f, uint32_t min_chars) {
  FittedLabel r;
  if (text.empty() || max_px <= 0) return r;
  float w = 0;
  size_t n = text.size();
  // Does the whole text fit? Walk until it does not.
  size_t i = 0;
  for (; i < n; ++i) {
    unsigned char ch = (unsigned char)text[i];
    float a = ch < 128 ? f.advance[ch] : ((ch & 0xC0) != 0x80 ? f.other : 0.0f);
    if (w + a > max_px) break;
    w += a;
  }
  if (i == n) {
    r.bytes = uint32_t(n);
    r.width = w;
    return r;
  }
  // It does not: keep the characters that fit alongside the ellipsis.
  float room = max_px - f.ellipsis;
  if (room < 0) return r;
  w = 0;
  size_t cut = 0, chars = 0;
  for (i = 0; i < n;) {
    unsigned char ch = (unsigned char)text[i];
    size_t len = ch < 0x80 ? 1 : ch >= 0xF0 ? 4 : ch >= 0xE0 ? 3 : ch >= 0xC0 ? 2 : 1;
    float a = ch < 128 ? f.advance[ch] : f.other;
    if (w + a > room) break;
    w += a;
    i += len;
    if (i > n) break;
    cut = i;
    ++chars;
  }
  if (chars < min_chars) return r;
  // Do not end on a space before the ellipsis.
  while (cut > 0 && text[cut - 1] == ' ') {
    --cut;
    w -= f.advance[uint8_t(' ')];
  }
  if (cut == 0) return r;
  r.bytes = uint32_t(cut);
  r.ellipsis = true;
  r.width = w + f.ellipsis;
  return r;
}

namespace {

// The qualified name's last component in `name`, and where its template arguments end (the
// matching '>'), as offsets; `args_end` == `end` when it has none.
struct NameParts {
  size_t begin = 0, end = 0, args_end = 0;
};

NameParts name_parts(std::string_view name) {
  size_t s0 = name.starts_with("void ") ? 5 : 0;
  std::string_view s = name.substr(s0);
  size_t end = s.size();
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '(' && s.substr(i).starts_with("(anonymous namespace)")) {
      i += 20;
      continue;
    }
    if (c == '(' || c == '<') {
      end = i;
      break;
    }
  }
  size_t begin = s.substr(0, end).rfind("::");
  begin = begin == std::string_view::npos ? 0 : begin + 2;
  size_t last = end;
  while (last > begin && s[last - 1] == ' ') --last;
  size_t args_end = last;
  if (end < s.size() && s[end] == '<') {
    int depth = 0;
    for (size_t i = end; i < s.size(); ++i) {
      depth += s[i] == '<' ? 1 : s[i] == '>' ? -1 : 0;
      if (depth == 0) {
        args_end = i + 1;
        break;
      }
    }
  }
  return {s0 + begin, s0 + last, s0 + args_end};
}

// A component that says nothing without its template arguments ("Kernel", "Kernel2").
bool generic_component(std::string_view c) {
  while (!c.empty() && c.back() >= '0' && c.back() <= '9') c.remove_suffix(1);
  return c == "Kernel" || c == "kernel" || c == "Kernel_" || c == "device_kernel";
}

}  // namespace

std::string_view short_name(std::string_view name) {
  NameParts p = name_parts(name);
  if (p.end <= p.begin) return name;
  std::string_view q = name.substr(p.begin, (generic_component(name.substr(p.begin, p.end - p.begin)) ? p.args_end : p.end) - p.begin);
  return q.empty() || q.size() == name.size() ? name : q;
}

std::vector<std::string_view> distinct_short_names(const std::vector<std::string_view>& names) {
  std::vector<std::string_view> out;
  for (std::string_view n : names) out.push_back(short_name(n));
  // Where different names shorten alike, their template arguments tell them apart; else the
  // whole name does.
  for (int pass = 0; pass < 2; ++pass)
    for (size_t i = 0; i < out.size(); ++i)
      for (size_t j = 0; j < out.size(); ++j) {
        if (i == j || out[i] != out[j] || names[i] == names[j]) continue;
        for (size_t k : {i, j}) {
          NameParts p = name_parts(names[k]);
          out[k] = pass == 0 && p.args_end > p.begin ? names[k].substr(p.begin, p.args_end - p.begin) : names[k];
        }
      }
  return out;
}

}  // namespace strata::render
