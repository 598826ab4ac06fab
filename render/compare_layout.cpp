#include "render/compare_layout.h"

#include "core/text_format.h"
#include "render/elide.h"
#include "render/ruler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

namespace strata::render {

namespace {

constexpr Rgba kTitle = rgba(235, 235, 240), kSubtitle = rgba(170, 172, 180), kBackground = rgba(34, 35, 39),
               kGrid = rgba(58, 60, 66), kOutline = rgba(255, 255, 255);
constexpr Rgba kSlower = rgba(213, 94, 0), kFaster = rgba(0, 158, 115), kSame = rgba(120, 122, 130),
               kOneSide = rgba(86, 180, 233);
// Phases in neutral shades, alternating so that neighbours part: the hues are the changes'.
constexpr Rgba kPhase[2] = {rgba(74, 78, 90), rgba(92, 96, 110)};

Rgba mix(Rgba a, Rgba b, float f) {
  auto ch = [&](int shift) {
    const float x = float((a >> shift) & 255), y = float((b >> shift) & 255);
    return Rgba(std::lround(x + (y - x) * f)) << shift;
  };
  return ch(0) | ch(8) | ch(16) | (Rgba(255) << 24);
}

// The layer row of each side's path: "A:Forward/Model/Conv 3" → its index in d.layers.
std::unordered_map<std::string, int64_t> rows_by_path(const Diff& d) {
  std::unordered_map<std::string, int64_t> out;
  for (size_t i = 0; i < d.layers.size(); ++i) {
    if (!d.layers[i].name_a.empty()) out.emplace("A:" + d.layers[i].name_a, int64_t(i));
    if (!d.layers[i].name_b.empty()) out.emplace("B:" + d.layers[i].name_b, int64_t(i));
  }
  return out;
}

// A phase's or layer's row in its block: 0 for the phases, then one per layer depth; -1 for
// anything else, or an iteration that is not drawn.
int row_of(const AnnotationTree& t, NodeId iteration, NodeId n) {
  if (t.kind[n] != NodeKind::Phase && t.kind[n] != NodeKind::Layer) return -1;
  return int(t.depth[n]) - int(t.depth[iteration]) - 1;
}

// The rows the two iterations need: the phases' and their deepest layer's, at most 1 + max_depth.
int rows_needed(const CompareInput& in, int max_depth) {
  int deepest = -1;
  for (const auto& [t, it] : {std::pair{in.tree_a, in.iteration_a}, std::pair{in.tree_b, in.iteration_b}}) {
    if (it == kNoNode) continue;
    for (NodeId n = it + 1; n < t->subtree_end[it]; ++n) deepest = std::max(deepest, row_of(*t, it, n));
  }
  return std::max(1, std::min(deepest, max_depth) + 1);
}

// The time axis: a tick with its label at least two labels' width apart, its line down
// through both blocks.
void layout_axis(const CompareStyle& st, Ns longer, CompareLayout& out) {
  if (longer <= 0) return;
  const double min_px = 2.0 * double(st.font.width("000.0 ms"));
  const double step = nice_step(double(longer) / std::max(1.0, double(st.width) / min_px));
  for (double t = 0; t <= double(longer); t += step) {
    const float x = out.bars_x + float(t * out.px_per_ns);
    out.rects.push_back({x, st.axis_h - 2 * st.bar_gap, x + 1, out.height, kGrid, 0});
    out.texts.push_back({x + 3, 0, kSubtitle, t == 0 ? std::string("0") : format_time(t, step)});
  }
}

// One side's title, its iteration's length, and a background per row as long as the iteration.
void layout_frame(const CompareStyle& st, bool b, CompareLayout& out) {
  const float y = out.block_y[b];
  const Ns span = b ? out.span_b : out.span_a;
  out.texts.push_back({0, y, kTitle, b ? "B" : "A", true});
  out.texts.push_back({0, y + st.row_h, kSubtitle, format_duration(span)});
  const float span_px = std::max(1.0f, float(double(span) * out.px_per_ns));
  for (int r = 0; r < out.rows; ++r) {
    const float y0 = y + float(r) * st.row_h;
    out.rects.push_back({out.bars_x, y0, out.bars_x + span_px, y0 + st.row_h - st.bar_gap, kBackground, 0});
  }
}

// One side's bars: a bar per phase and layer, labelled where the name fits. In wall time a
// layer's time runs from the end of what ran before it in its parent, a layer or a loose op
// (diff.h's rule): the gap between them (a stall) is drawn before its bar as a darker lead-in.
// The selected row's outlines go to `outlines`.
void layout_bars(const CompareInput& in, const CompareStyle& st, bool b, const std::unordered_map<std::string, int64_t>& rows,
                 CompareLayout& out, std::vector<DrawRect>& outlines) {
  const AnnotationTree& t = b ? *in.tree_b : *in.tree_a;
  const NodeId it = b ? in.iteration_b : in.iteration_a;
  if (it == kNoNode) return;
  const float y = out.block_y[b], bar_h = st.row_h - st.bar_gap;
  const Ns t0 = t.begin[it], t1 = t.end[it];
  auto x_of = [&](Ns time) { return out.bars_x + float(double(std::clamp(time, t0, t1) - t0) * out.px_per_ns); };
  const bool wall = in.diff->time_basis == "wall";
  // Per parent, by its place in the subtree: where its last child so far ended (none yet: no
  // lead-in for the first).
  std::vector<Ns> last_end(t.subtree_end[it] - it, std::numeric_limits<Ns>::max());
  const char* side = b ? "B:" : "A:";
  int phases = 0;
  for (NodeId n = it + 1; n < t.subtree_end[it]; ++n) {
    Ns from = t.begin[n];
    Ns& sibling_end = last_end[t.parent[n] - it];
    if (wall && t.kind[n] == NodeKind::Layer) from = std::min(from, sibling_end);
    sibling_end = t.end[n];
    const int r = row_of(t, it, n);
    if (r < 0 || r >= out.rows) continue;
    const float lead_x = x_of(from), x0 = x_of(t.begin[n]), x1 = std::max(x0 + 1.0f, x_of(t.end[n]));
    const float y0 = y + float(r) * st.row_h, y1 = y0 + bar_h;
    int64_t diff_row = -1;
    Rgba fill = kSame;
    if (t.kind[n] == NodeKind::Phase) {
      fill = kPhase[phases++ % 2];
    } else if (auto found = rows.find(side + path_in_iteration(t, n)); found != rows.end()) {
      diff_row = found->second;
      fill = change_colour(in.diff->layers[size_t(diff_row)]);
    }
    if (x0 > lead_x) out.rects.push_back({lead_x, y0, x0, y1, darken(fill, 0.45f), 0});
    out.rects.push_back({x0, y0, x1, y1, fill, 0});
    if (diff_row >= 0 && diff_row == in.selected_row) {  // an outline, as four thin rects
      const float w = std::min(st.outline, (x1 - lead_x) / 2);
      outlines.push_back({lead_x, y0, x1, y0 + st.outline, kOutline, kSelected});
      outlines.push_back({lead_x, y1 - st.outline, x1, y1, kOutline, kSelected});
      outlines.push_back({lead_x, y0, lead_x + w, y1, kOutline, kSelected});
      outlines.push_back({x1 - w, y0, x1, y1, kOutline, kSelected});
    }
    out.items.push_back({lead_x, y0, x1, y1, b, n, diff_row, t.begin[n] - std::min(from, t.begin[n])});
    const std::string label = elide_middle(t.name_of(n), x1 - lead_x - 4, st.font);
    if (!label.empty() && label != "…")
      out.texts.push_back({lead_x + 2, y0 + (bar_h - st.font.height) / 2, text_on(x0 - lead_x > x1 - x0 ? darken(fill, 0.45f) : fill), label});
  }
}

}  // namespace

void CompareLayout::clear() {
  rects.clear();
  texts.clear();
  items.clear();
  px_per_ns = 0;
  bars_x = width = height = 0;
  block_y[0] = block_y[1] = 0;
  rows = 0;
  span_a = span_b = 0;
}

const CompareItem* CompareLayout::hit(float x, float y) const {
  const CompareItem* found = nullptr;
  for (const CompareItem& i : items)  // the last drawn there wins, as on screen
    if (x >= i.x0 && x < i.x1 && y >= i.y0 && y < i.y1) found = &i;
  return found;
}

Rgba change_colour(const DiffRow& r) {
  if (!r.a || !r.b) return kOneSide;
  const double larger = double(std::max(*r.a, *r.b));
  if (larger <= 0) return kSame;
  const float f = float(std::min(1.0, std::abs(double(r.delta())) / (0.5 * larger)));
  return mix(kSame, r.delta() > 0 ? kSlower : kFaster, f);
}

std::vector<LegendEntry> change_legend() {
  return {{"slower in B (full at +50%)", kSlower},
          {"faster in B (full at -50%)", kFaster},
          {"unchanged", kSame},
          {"in one run only", kOneSide}};
}

void layout_compare(const CompareInput& in, const CompareStyle& st, CompareLayout& out) {
  out.clear();
  if (!in.diff || !in.tree_a || !in.tree_b || (in.iteration_a == kNoNode && in.iteration_b == kNoNode)) return;
  auto span = [](const AnnotationTree& t, NodeId n) { return n == kNoNode ? Ns(0) : t.end[n] - t.begin[n]; };
  out.span_a = span(*in.tree_a, in.iteration_a);
  out.span_b = span(*in.tree_b, in.iteration_b);
  const Ns longer = std::max(out.span_a, out.span_b);
  out.px_per_ns = longer > 0 ? double(st.width) / double(longer) : 0;
  out.bars_x = st.label_w;
  out.width = st.label_w + st.width;
  out.rows = rows_needed(in, st.max_depth);
  const float block_h = float(out.rows) * st.row_h;
  out.block_y[0] = st.axis_h;
  out.block_y[1] = st.axis_h + block_h + st.block_gap;
  out.height = out.block_y[1] + block_h;
  // Back to front: the rows' backgrounds, the grid, the bars, the selection's outlines.
  layout_frame(st, false, out);
  layout_frame(st, true, out);
  layout_axis(st, longer, out);
  const std::unordered_map<std::string, int64_t> rows = rows_by_path(*in.diff);
  std::vector<DrawRect> outlines;
  layout_bars(in, st, false, rows, out, outlines);
  layout_bars(in, st, true, rows, out, outlines);
  out.rects.insert(out.rects.end(), outlines.begin(), outlines.end());
}

}  // namespace strata::render
