// Text and paths too long for their room, shortened in the middle so that both ends stay
// readable: a name keeps its start and its end ("sm80_xmma_fp…_kernel"), and the breadcrumbs
// keep the coarsest and the finest items of a path, hiding those between behind one "…"; and
// text wrapped into lines at its spaces.
#pragma once

#include "render/labels.h"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace strata::render {

// `text` if it fits `max_px`; else its start, "…" and its end, as wide as fits (never cut
// inside a UTF-8 sequence). "…" alone when nothing more fits, empty when not even that.
std::string elide_middle(std::string_view text, float max_px, const FontMetrics& f);

// `text` broken into lines no wider than `max_px`, at spaces (and its own newlines) only: a
// figure such as "10.129 ms" never splits at its point, as Dear ImGui's wrapping (which may
// break after '.' and ',') did. A word wider than a whole line is cut where the line ends
// (never inside a UTF-8 sequence). The lines are views into `text`, without the spaces broken at.
std::vector<std::string_view> wrap_at_spaces(std::string_view text, float max_px, const FontMetrics& f);

// Which items of a path to show in `room`: the first and the last always, hiding a run in the
// middle (shown as one "…" item `ellipsis_w` wide) until the rest fits. `widths` are the
// items' widths; `gap` is what separates two shown items.
struct PathFit {
  size_t hidden_begin = 0, hidden_end = 0;  // the hidden run [begin, end); empty when all fit
  float width = 0;                          // of what is shown, separators included
  bool hides() const { return hidden_end > hidden_begin; }
};
PathFit fit_path(const std::vector<float>& widths, float gap, float ellipsis_w, float room);

}  // namespace strata::render
