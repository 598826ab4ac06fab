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

std::string_view short_name(std::string_view name) {
  // Find the end of the qualified name: the first '(' or '<' at nesting depth 0, skipping
  // "(anonymous namespace)".
  std::string_view s = name;
  if (s.starts_with("void ")) s.remove_prefix(5);
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
  std::string_view q = s.substr(0, end);
  // The last component of the qualified name.
  size_t colon = q.rfind("::");
  if (colon != std::string_view::npos) q.remove_prefix(colon + 2);
  while (!q.empty() && q.back() == ' ') q.remove_suffix(1);
  if (q.empty() || q.size() == name.size()) return name;
  return q;
}

}  // namespace strata::render
