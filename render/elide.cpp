#include "render/elide.h"

#include <algorithm>

namespace strata::render {

namespace {

bool is_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

}  // namespace

std::string elide_middle(std::string_view text, float max_px, const FontMetrics& f) {
  if (f.width(text) <= max_px) return std::string(text);
  if (f.ellipsis > max_px) return {};
  std::vector<size_t> starts;  // each character's first byte
  for (size_t i = 0; i < text.size(); ++i)
    if (!is_continuation(text[i])) starts.push_back(i);
  const size_t n = starts.size();
  auto char_at = [&](size_t k) { return text.substr(starts[k], (k + 1 < n ? starts[k + 1] : text.size()) - starts[k]); };
  // Characters [0, head) and [tail, n) are kept; the front and the back take one in turn.
  float room = max_px - f.ellipsis;
  size_t head = 0, tail = n;
  bool head_full = false, tail_full = false;
  while (head < tail && !(head_full && tail_full)) {
    const bool front = !head_full && (tail_full || head <= n - tail);
    const float w = f.width(char_at(front ? head : tail - 1));
    if (w > room) {
      (front ? head_full : tail_full) = true;
      continue;
    }
    room -= w;
    if (front) ++head;
    else --tail;
  }
  // No space next to the ellipsis.
  while (head > 0 && text[starts[head - 1]] == ' ') --head;
  while (tail < n && text[starts[tail]] == ' ') ++tail;
  std::string out(text.substr(0, head < n ? starts[head] : text.size()));
  out += "\xE2\x80\xA6";
  if (tail < n) out += text.substr(starts[tail]);
  return out;
}

namespace {

// The bytes of `word` (from its start) that fit `room`: one character at least.
size_t fitting_prefix(std::string_view word, float room, const FontMetrics& f) {
  size_t end = 0;
  float w = 0;
  for (size_t i = 0; i < word.size();) {
    size_t next = i + 1;
    while (next < word.size() && is_continuation(word[next])) ++next;
    w += f.width(word.substr(i, next - i));
    if (w > room && end > 0) break;
    end = next;
    i = next;
  }
  return end;
}

void wrap_paragraph(std::string_view text, float max_px, const FontMetrics& f, std::vector<std::string_view>& lines) {
  const float space = f.width(" ");
  size_t line_begin = std::string_view::npos, line_end = 0;
  float line_w = 0;
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == ' ') {
      ++i;
      continue;
    }
    const size_t word_end = std::min(text.find(' ', i), text.size());
    std::string_view word = text.substr(i, word_end - i);
    const float word_w = f.width(word);
    if (line_begin != std::string_view::npos && line_w + space + word_w <= max_px) {
      line_end = word_end;
      line_w += space + word_w;
      i = word_end;
      continue;
    }
    if (line_begin != std::string_view::npos) lines.push_back(text.substr(line_begin, line_end - line_begin));
    line_begin = i;
    if (word_w <= max_px) {
      line_end = word_end;
      line_w = word_w;
      i = word_end;
      continue;
    }
    // Wider than a line: cut where the line ends; the rest starts the next.
    const size_t cut = fitting_prefix(word, max_px, f);
    lines.push_back(word.substr(0, cut));
    line_begin = std::string_view::npos;
    line_w = 0;
    i += cut;
  }
  if (line_begin != std::string_view::npos) lines.push_back(text.substr(line_begin, line_end - line_begin));
}

}  // namespace

std::vector<std::string_view> wrap_at_spaces(std::string_view text, float max_px, const FontMetrics& f) {
  std::vector<std::string_view> lines;
  for (size_t start = 0;;) {
    const size_t nl = text.find('\n', start);
    const size_t before = lines.size();
    wrap_paragraph(text.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start), max_px, f, lines);
    if (lines.size() == before) lines.emplace_back();  // an empty line stays one
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  return lines;
}

PathFit fit_path(const std::vector<float>& widths, float gap, float ellipsis_w, float room) {
  PathFit fit;
  const size_t n = widths.size();
  float all = 0;
  for (size_t i = 0; i < n; ++i) all += widths[i] + (i ? gap : 0);
  fit.width = all;
  if (all <= room || n < 3) return fit;
  // Grow a hidden run outwards from the middle, keeping the sides balanced, until it fits or
  // only the first and the last are left.
  size_t a = n / 2, b = n / 2;
  float hidden = 0;  // widths and gaps of the run
  while (b - a < n - 2) {
    const size_t left = a - 1, right = n - 1 - b;  // items still shown on each side, the ends included
    if (left >= right && a > 1) hidden += widths[--a] + gap;
    else hidden += widths[b++] + gap;
    fit.hidden_begin = a;
    fit.hidden_end = b;
    fit.width = all - hidden + ellipsis_w + gap;
    if (fit.width <= room) break;
  }
  return fit;
}

}  // namespace strata::render
