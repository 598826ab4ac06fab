#include "render/elide.h"

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
