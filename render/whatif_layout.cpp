#include "render/whatif_layout.h"

#include "core/text_format.h"

#include <algorithm>

namespace strata::render {

namespace {

constexpr Rgba kTitle = rgba(235, 235, 240), kLaneName = rgba(170, 172, 180), kLaneBackground = rgba(34, 35, 39);

// One block: the title, then each of the first part's lanes with the vertices between t0 and
// t1 (on `times`' clock), from `y`.
void layout_block(const whatif::Graph& g, const WhatIfTimes& times, Ns t0, Ns t1, std::string title, float y, bool predicted,
                  const WhatIfStyle& st, WhatIfLayout& out) {
  const std::vector<Ns>& start = *times.start;
  const std::vector<Ns>& end = *times.end;
  const std::vector<uint8_t>& critical = *times.critical;
  const float bar_h = st.row_h - st.bar_gap, x_base = out.bars_x;
  out.texts.push_back({0, y, kTitle, std::move(title)});
  y += st.row_h;
  for (const whatif::Lane& lane : g.lanes) {
    if (lane.part != 0) continue;
    out.texts.push_back({0, y, kLaneName,
                         lane.gpu ? strprintf("GPU %d stream %lld", lane.device, (long long)lane.id)
                                  : strprintf("thread %lld", (long long)shown_thread_id(lane.id))});
    out.rects.push_back({x_base, y, x_base + st.width, y + bar_h, kLaneBackground, 0});
    WhatIfRow row{y, y + st.row_h, uint32_t(out.items.size()), 0, predicted};
    float run_x0 = -1, run_x1 = -1;
    Rgba run_c = 0;
    auto flush = [&] {
      if (run_x1 > run_x0) out.rects.push_back({run_x0, y, run_x1, y + bar_h, run_c, 0});
    };
    // A lane's vertices run one after another (program or stream order): the iteration's are
    // a contiguous run, found by binary search.
    auto first = std::partition_point(lane.vertices.begin(), lane.vertices.end(), [&](whatif::Vertex x) { return end[x] <= t0; });
    for (auto it = first; it != lane.vertices.end() && start[*it] < t1; ++it) {
      const whatif::Vertex vx = *it;
      if (end[vx] <= t0) continue;
      // A thread's idle stretch is drawn only when the iteration waited for it.
      const bool idle = g.kind[vx] == whatif::VertexKind::CpuWork && g.event[vx] == kNoEvent && g.node[vx] == kNoNode;
      if (idle && !critical[vx]) continue;
      const float x0 = x_base + float(double(std::max(start[vx], t0) - t0) * out.px_per_ns);
      const float x1 = std::max(x0 + 1.0f, x_base + float(double(std::min(end[vx], t1) - t0) * out.px_per_ns));
      const Rgba c = whatif_vertex_colour(g.kind[vx], critical[vx]);
      if (c == run_c && x0 <= run_x1 + 0.5f) {  // runs under a pixel apart: one rect
        run_x1 = std::max(run_x1, x1);
      } else {
        flush();
        run_x0 = x0, run_x1 = x1, run_c = c;
      }
      out.items.push_back({x0, x1, vx});
    }
    flush();
    row.item_end = uint32_t(out.items.size());
    out.rows.push_back(row);
    y += st.row_h;
  }
}

}  // namespace

void WhatIfLayout::clear() {
  rects.clear();
  texts.clear();
  rows.clear();
  items.clear();
  iteration = 0;
  measured_t0 = measured_t1 = predicted_t0 = predicted_t1 = 0;
  px_per_ns = 0;
  bars_x = block_h = width = height = 0;
}

whatif::Vertex WhatIfLayout::hit(float x, float y) const {
  for (const WhatIfRow& r : rows) {
    if (y < r.y0 || y >= r.y1) continue;
    for (uint32_t i = r.item_end; i > r.item_begin; --i)
      if (x >= items[i - 1].x0 && x < items[i - 1].x1) return items[i - 1].vertex;
    return whatif::kNoVertex;
  }
  return whatif::kNoVertex;
}

Rgba whatif_vertex_colour(whatif::VertexKind k, bool critical) {
  using K = whatif::VertexKind;
  const Rgba c = k == K::GpuOp      ? base_colour(Hue::Kernel)
                 : k == K::Launch   ? rgba(86, 140, 200)
                 : k == K::HostWait ? rgba(230, 159, 0)
                 : k == K::Call     ? rgba(120, 130, 150)
                                    : rgba(90, 92, 100);
  return critical ? c : with_alpha(darken(c, 0.45f), 255);
}

void layout_whatif(const WhatIfInput& in, const WhatIfStyle& st, WhatIfLayout& out) {
  out.clear();
  if (!in.graph || in.graph->parts.empty() || !in.measured.start || !in.predicted.start) return;
  const whatif::Graph& g = *in.graph;
  const whatif::Part& part = g.parts.front();
  // The first complete iteration (its start and end are boundaries 2·it and 2·it + 1).
  size_t it = 0;
  while (it + 1 < part.partial.size() && part.partial[it]) ++it;
  auto boundary_time = [&](const std::vector<Ns>& start, size_t i) {
    if (part.boundaries.empty()) return Ns(0);
    const whatif::Boundary& b = part.boundaries[std::min(i, part.boundaries.size() - 1)];
    return b.vertex == whatif::kNoVertex ? Ns(0) : start[b.vertex] + b.offset;
  };
  out.iteration = it;
  out.measured_t0 = boundary_time(*in.measured.start, 2 * it), out.measured_t1 = boundary_time(*in.measured.start, 2 * it + 1);
  out.predicted_t0 = boundary_time(*in.predicted.start, 2 * it), out.predicted_t1 = boundary_time(*in.predicted.start, 2 * it + 1);
  const double span = double(std::max<Ns>({out.measured_t1 - out.measured_t0, out.predicted_t1 - out.predicted_t0, 1}));
  out.px_per_ns = double(st.width) / span;
  out.bars_x = st.label_w;
  size_t lanes = 0;
  for (const whatif::Lane& l : g.lanes) lanes += l.part == 0;
  out.block_h = float(lanes + 1) * st.row_h + st.block_gap;
  out.width = st.label_w + st.width;
  out.height = 2 * out.block_h;

  const std::string it_name = in.iterations && it < in.iterations->size() ? (*in.iterations)[it].name : "the trace";
  layout_block(g, in.measured, out.measured_t0, out.measured_t1,
               strprintf("%s as measured: %s (bright: its critical path)", it_name.c_str(),
                         format_duration(out.measured_t1 - out.measured_t0).c_str()),
               0, false, st, out);
  layout_block(g, in.predicted, out.predicted_t0, out.predicted_t1,
               strprintf("predicted with %s: %s", in.scenario.c_str(), format_duration(out.predicted_t1 - out.predicted_t0).c_str()),
               out.block_h, true, st, out);
}

}  // namespace strata::render
