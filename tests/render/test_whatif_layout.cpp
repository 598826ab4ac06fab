// The What-if tab's picture (render/whatif_layout): which iteration, one time scale for the
// measured and the predicted blocks, a bar per vertex in its lane's row, idle stretches only on
// the critical path, merged runs, colours by kind and critical path, hit testing; on a small
// made-up graph and on a real trace's replay.
#include "core/annotate/annotation.h"
#include "core/loader.h"
#include "core/text_format.h"
#include "core/whatif/replay.h"
#include "core/whatif/scenarios.h"
#include "render/whatif_layout.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>

using namespace strata;
using namespace strata::render;
using whatif::Vertex;
using whatif::VertexKind;

namespace {

// A thread and a GPU stream, two iterations (the first cut by the trace's start):
//   thread: v0 cpu [0,1000)  v1 launch [1000,1100)  v2 idle [1100,1500)  v3 sync [1500,2000)  v5 cpu [2000,2500)
//   stream: v4 kernel [1100,1600)  v6 kernel [1600,1700)
// Iteration 2 is [1000, 2000): v1's start to v5's.
struct MadeUp {
  whatif::Graph g;
  std::vector<Ns> measured_end;
  std::vector<uint8_t> critical_measured, critical_predicted;
  std::vector<Ns> predicted_start, predicted_end;
  std::vector<Iteration> iterations;

  Vertex add(VertexKind k, uint32_t lane, Ns start, Ns dur, EventId e) {
    const Vertex v = Vertex(g.size());
    g.kind.push_back(k);
    g.start.push_back(start);
    g.dur.push_back(dur);
    g.work.push_back(dur);
    g.event.push_back(e);
    g.lane.push_back(lane);
    g.node.push_back(kNoNode);
    g.phase.push_back(PhaseKind{});
    g.lanes[lane].vertices.push_back(v);
    return v;
  }

  MadeUp() {
    g.lanes.resize(2);
    g.lanes[0].id = 100;
    g.lanes[1].gpu = true, g.lanes[1].device = 0, g.lanes[1].id = 7;
    add(VertexKind::CpuWork, 0, 0, 1000, 0);
    add(VertexKind::Launch, 0, 1000, 100, 1);
    add(VertexKind::CpuWork, 0, 1100, 400, kNoEvent);  // idle
    add(VertexKind::HostWait, 0, 1500, 500, 2);
    add(VertexKind::GpuOp, 1, 1100, 500, 3);
    add(VertexKind::CpuWork, 0, 2000, 500, 4);
    add(VertexKind::GpuOp, 1, 1600, 100, 5);
    std::sort(g.lanes[1].vertices.begin(), g.lanes[1].vertices.end(), [&](Vertex a, Vertex b) { return g.start[a] < g.start[b]; });
    whatif::Part part;
    part.boundaries = {{0, 0}, {1, 0}, {1, 0}, {5, 0}};
    part.partial = {1, 0};
    g.parts.push_back(part);
    for (size_t v = 0; v < g.size(); ++v) measured_end.push_back(g.start[v] + g.dur[v]);
    critical_measured = {0, 1, 0, 1, 1, 0, 1};
    // Kernels twice as fast: the thread idles less, the sync returns when v6 ends, at 1400, and
    // the next iteration starts then.
    predicted_start = {0, 1000, 1100, 1200, 1100, 1400, 1350};
    predicted_end = {1000, 1100, 1200, 1400, 1350, 1900, 1400};
    critical_predicted = {0, 1, 1, 0, 0, 0, 0};  // the idle stretch is on it, the kernels are not
    iterations = {{kNoNode, "Iteration 1"}, {kNoNode, "Iteration 2"}};
  }

  WhatIfInput input() const {
    WhatIfInput in;
    in.graph = &g;
    in.measured = {&g.start, &measured_end, &critical_measured};
    in.predicted = {&predicted_start, &predicted_end, &critical_predicted};
    in.iterations = &iterations;
    in.scenario = "kernels-2x";
    return in;
  }
};

// The rects lying in a row (its background first).
std::vector<DrawRect> rects_in(const WhatIfLayout& l, const WhatIfRow& r) {
  std::vector<DrawRect> out;
  for (const DrawRect& d : l.rects)
    if (d.y0 >= r.y0 && d.y1 <= r.y1) out.push_back(d);
  return out;
}

}  // namespace

TEST_CASE("what-if layout: the first complete iteration, measured above predicted on one scale") {
  MadeUp m;
  WhatIfStyle st;
  st.row_h = 20, st.bar_gap = 2, st.label_w = 150, st.block_gap = 6, st.width = 1000;
  WhatIfLayout l;
  layout_whatif(m.input(), st, l);

  CHECK(l.iteration == 1);
  CHECK(l.measured_t0 == 1000);
  CHECK(l.measured_t1 == 2000);
  CHECK(l.predicted_t0 == 1000);
  CHECK(l.predicted_t1 == 1400);
  CHECK(l.px_per_ns == doctest::Approx(1.0));  // the longer (measured) span fills the width
  CHECK(l.bars_x == 150);
  CHECK(l.block_h == doctest::Approx(3 * 20 + 6));  // a title and two lanes
  CHECK(l.width == doctest::Approx(1150));
  CHECK(l.height == doctest::Approx(2 * l.block_h));

  // Titles (with the one duration formatter) and lane names, in the label column.
  REQUIRE(l.texts.size() == 6);
  CHECK(l.texts[0].text == "Iteration 2 as measured: 1.000 \xC2\xB5s (bright: its critical path)");
  CHECK(l.texts[1].text == "thread 100");
  CHECK(l.texts[2].text == "GPU 0 stream 7");
  CHECK(l.texts[3].text == "predicted with kernels-2x: 400 ns");
  CHECK(l.texts[3].y == doctest::Approx(l.block_h));
  for (const WhatIfText& t : l.texts) CHECK(t.x == 0);

  // Rows: thread and stream, measured then predicted; each row's items are its lane's vertices
  // within the iteration.
  REQUIRE(l.rows.size() == 4);
  CHECK_FALSE(l.rows[0].predicted);
  CHECK(l.rows[2].predicted);
  CHECK(l.rows[0].y0 == doctest::Approx(20));
  CHECK(l.rows[2].y0 == doctest::Approx(l.block_h + 20));
  auto vertices = [&](const WhatIfRow& r) {
    std::vector<Vertex> v;
    for (uint32_t i = r.item_begin; i < r.item_end; ++i) v.push_back(l.items[i].vertex);
    return v;
  };
  // Measured: v0 ends where the iteration starts, v5 starts where it ends; the idle stretch v2
  // is off the critical path: not drawn.
  CHECK(vertices(l.rows[0]) == std::vector<Vertex>{1, 3});
  CHECK(vertices(l.rows[1]) == std::vector<Vertex>{4, 6});
  // Predicted: the idle stretch is on the critical path now.
  CHECK(vertices(l.rows[2]) == std::vector<Vertex>{1, 2, 3});
  CHECK(vertices(l.rows[3]) == std::vector<Vertex>{4, 6});

  // Bars: x from the iteration's start on the shared scale.
  const WhatIfItem& sync = l.items[l.rows[0].item_begin + 1];
  CHECK(sync.x0 == doctest::Approx(150 + 500));
  CHECK(sync.x1 == doctest::Approx(150 + 1000));
  const WhatIfItem& fast = l.items[l.rows[3].item_begin];
  CHECK(fast.x0 == doctest::Approx(150 + 100));
  CHECK(fast.x1 == doctest::Approx(150 + 350));
  for (const WhatIfItem& it : l.items) {
    CHECK(it.x0 >= l.bars_x);
    CHECK(it.x1 <= l.bars_x + st.width + 1);
    CHECK(it.x1 - it.x0 >= 1);
  }

  // The measured stream: a background, then v4 and v6 (both bright kernels, touching) merged.
  const std::vector<DrawRect> gpu = rects_in(l, l.rows[1]);
  REQUIRE(gpu.size() == 2);
  CHECK(gpu[0].x0 == doctest::Approx(150));
  CHECK(gpu[0].x1 == doctest::Approx(1150));
  CHECK(gpu[1].x0 == doctest::Approx(150 + 100));
  CHECK(gpu[1].x1 == doctest::Approx(150 + 700));
  CHECK(gpu[1].y1 - gpu[1].y0 == doctest::Approx(18));  // the row less the gap
  CHECK(gpu[1].fill == whatif_vertex_colour(VertexKind::GpuOp, true));
  // Predicted, off the critical path: dimmed.
  const std::vector<DrawRect> gpu_p = rects_in(l, l.rows[3]);
  REQUIRE(gpu_p.size() == 2);
  CHECK(gpu_p[1].fill == whatif_vertex_colour(VertexKind::GpuOp, false));
  CHECK(whatif_vertex_colour(VertexKind::GpuOp, false) != whatif_vertex_colour(VertexKind::GpuOp, true));
  CHECK(whatif_vertex_colour(VertexKind::Launch, true) != whatif_vertex_colour(VertexKind::HostWait, true));

  // Hit testing: a bar, a lane with nothing there, the label column, a title.
  CHECK(l.hit(150 + 600, l.rows[0].y0 + 5) == 3);
  CHECK(l.hit(150 + 300, l.rows[0].y0 + 5) == whatif::kNoVertex);  // the idle stretch is not drawn
  CHECK(l.hit(150 + 150, l.rows[2].y0 + 5) == 2);
  CHECK(l.hit(150 + 200, l.rows[3].y0 + 5) == 4);
  CHECK(l.hit(50, l.rows[1].y0 + 5) == whatif::kNoVertex);
  CHECK(l.hit(150 + 200, 5) == whatif::kNoVertex);

  // Laid out again into the same buffers: the same picture.
  const size_t rects = l.rects.size(), items = l.items.size();
  layout_whatif(m.input(), st, l);
  CHECK(l.rects.size() == rects);
  CHECK(l.items.size() == items);
}

TEST_CASE("what-if layout: without iterations the whole trace; without a graph nothing") {
  MadeUp m;
  m.iterations.clear();
  WhatIfLayout l;
  layout_whatif(m.input(), WhatIfStyle{}, l);
  REQUIRE_FALSE(l.texts.empty());
  CHECK(l.texts[0].text.rfind("the trace as measured", 0) == 0);
  layout_whatif(WhatIfInput{}, WhatIfStyle{}, l);
  CHECK(l.rects.empty());
  CHECK(l.texts.empty());
  CHECK(l.hit(10, 10) == whatif::kNoVertex);
}

TEST_CASE("what-if layout: a real trace's iteration replayed with kernels twice as fast") {
  std::filesystem::path p = std::filesystem::path(STRATA_TEST_DATA_DIR) / "torch2" / "resnet18-train-h100.pt.trace.json.gz";
  REQUIRE_MESSAGE(std::filesystem::exists(p), p.string());  // vendored in tests/data
  LoadResult r = load_trace(p.string());
  REQUIRE_MESSAGE(r.model, r.error());
  const TraceModel& m = *r.model;
  const Annotation a = annotate(m);
  const whatif::Graph g = whatif::build_graph(m, a);
  REQUIRE(g.size() > 0);
  const Result<whatif::Scenario> parsed = whatif::parse_scenario("kernels-2x", 2.0);
  REQUIRE(parsed.is_ok());
  const whatif::Scenario& sc = parsed.value();
  const whatif::ReplayResult unchanged = whatif::replay(g);
  const whatif::ReplayResult fast = whatif::replay(g, whatif::scenario_scale(g, sc).scale);
  std::vector<Ns> measured_end(g.size());
  for (size_t v = 0; v < g.size(); ++v) measured_end[v] = g.start[v] + g.dur[v];
  std::vector<uint8_t> crit_m(g.size(), 0), crit_p(g.size(), 0);
  for (Vertex v : unchanged.critical_path) crit_m[v] = 1;
  for (Vertex v : fast.critical_path) crit_p[v] = 1;

  WhatIfInput in;
  in.graph = &g;
  in.measured = {&g.start, &measured_end, &crit_m};
  in.predicted = {&fast.start, &fast.end, &crit_p};
  in.iterations = &a.iterations;
  in.scenario = sc.name;
  WhatIfStyle st;
  st.width = 900;
  WhatIfLayout l;
  layout_whatif(in, st, l);

  const whatif::Part& part = g.parts.front();
  REQUIRE(l.iteration < a.iterations.size());
  CHECK((l.iteration + 1 == part.partial.size() || !part.partial[l.iteration]));
  const Ns measured = l.measured_t1 - l.measured_t0, predicted = l.predicted_t1 - l.predicted_t0;
  CHECK(measured > 0);
  CHECK(predicted > 0);
  CHECK(predicted <= measured);  // faster kernels never slow the iteration
  CHECK(l.px_per_ns * double(std::max(measured, predicted)) == doctest::Approx(st.width));
  CHECK(l.texts.front().text == a.iterations[l.iteration].name + " as measured: " + format_duration(measured) +
                                    " (bright: its critical path)");

  size_t lanes = 0;
  for (const whatif::Lane& ln : g.lanes) lanes += ln.part == 0;
  REQUIRE(l.rows.size() == 2 * lanes);
  size_t bright_measured = 0, bright_predicted = 0, gpu_items = 0;
  for (const WhatIfRow& row : l.rows) {
    CHECK(row.y1 - row.y0 == doctest::Approx(st.row_h));
    CHECK(row.predicted == (row.y0 >= l.block_h));
    for (uint32_t i = row.item_begin; i < row.item_end; ++i) {
      const WhatIfItem& it = l.items[i];
      const Vertex v = it.vertex;
      const std::vector<Ns>& start = row.predicted ? fast.start : g.start;
      const std::vector<Ns>& end = row.predicted ? fast.end : measured_end;
      const Ns t0 = row.predicted ? l.predicted_t0 : l.measured_t0, t1 = row.predicted ? l.predicted_t1 : l.measured_t1;
      CHECK((end[v] > t0 && start[v] < t1));  // within the iteration
      CHECK(it.x0 >= l.bars_x - 0.01f);
      CHECK(it.x1 <= l.bars_x + st.width + 1.01f);
      CHECK(l.hit((it.x0 + it.x1) / 2, row.y0 + 1) != whatif::kNoVertex);
      (row.predicted ? bright_predicted : bright_measured) += (row.predicted ? crit_p : crit_m)[v];
      gpu_items += g.kind[v] == VertexKind::GpuOp;
    }
  }
  CHECK(bright_measured > 0);   // each timeline's critical path runs through the iteration
  CHECK(bright_predicted > 0);
  CHECK(gpu_items > 0);
  // Every rect lies in a row's bars area; the lane backgrounds span it.
  for (const DrawRect& d : l.rects) {
    CHECK(d.x0 >= l.bars_x - 0.01f);
    CHECK(d.x1 <= l.bars_x + st.width + 1.01f);
    CHECK(d.y1 <= l.height);
  }
}
