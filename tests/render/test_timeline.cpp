// The timeline's rows and per-frame layout on a small synthetic trace and on a real one:
// sections and lanes, hit testing back to events, highlighting, drill-down (focus path,
// children, levels roots, the selection's work figures), --focus paths, collapsing.
#include "core/loader.h"
#include "render/drill.h"
#include "render/search.h"
#include "render/timeline.h"
#include "test_data.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <string>

using namespace strata;
using namespace strata::render;

namespace {

const char* kTrace = R"J({"traceEvents":[
{"ph":"M","name":"process_name","pid":1,"tid":0,"args":{"name":"python"}},
{"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":"main"}},
{"ph":"M","name":"process_name","pid":0,"tid":0,"args":{"name":"GPU 0"}},
{"ph":"M","name":"process_labels","pid":0,"tid":0,"args":{"labels":"GPU 0"}},
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":1000},
{"ph":"X","cat":"cpu_op","name":"aten::conv2d","pid":1,"tid":1,"ts":10,"dur":400,"args":{"External id":1}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":20,"dur":5,"args":{"correlation":7,"External id":1}},
{"ph":"X","cat":"kernel","name":"void at::native::conv_kernel<float>(int)","pid":0,"tid":7,"ts":30,"dur":300,"args":{"correlation":7,"device":0,"stream":7,"External id":1}},
{"ph":"X","cat":"cpu_op","name":"aten::relu","pid":1,"tid":1,"ts":500,"dur":100,"args":{"External id":2}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":510,"dur":5,"args":{"correlation":8,"External id":2}},
{"ph":"X","cat":"kernel","name":"relu_kernel","pid":0,"tid":7,"ts":520,"dur":50,"args":{"correlation":8,"device":0,"stream":7}},
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#2","pid":1,"tid":1,"ts":1000,"dur":1000},
{"ph":"X","cat":"cpu_op","name":"aten::conv2d","pid":1,"tid":1,"ts":1010,"dur":300,"args":{"External id":3}}
]})J";

std::unique_ptr<TraceModel> load(std::string_view json) {
  LoadResult r = load_trace_bytes("synthetic.json", json);
  REQUIRE_MESSAGE(r.model, r.error());
  return std::move(r.model);
}

// A model, its annotation and the timeline over both (as the viewer prepares them).
struct Shown {
  std::unique_ptr<TraceModel> model;
  std::unique_ptr<Annotation> annotation;
  Timeline tl;
};

std::unique_ptr<Shown> show(std::unique_ptr<TraceModel> m) {
  auto s = std::make_unique<Shown>();
  s->model = std::move(m);
  s->annotation = std::make_unique<Annotation>(annotate(*s->model));
  s->tl.build(*s->model);
  s->tl.set_annotation(s->annotation.get());
  return s;
}

EventId find(const TraceModel& m, std::string_view name, int nth = 0) {
  for (EventId e = 0; e < m.ev.size(); ++e)
    if (m.name_of(e) == name && nth-- == 0) return e;
  return kNoEvent;
}

TimeView whole(const TraceModel& m, float width) {
  TimeView v;
  v.width_px = width;
  v.set_extent(double(m.time_begin), double(m.time_end));
  v.fit(double(m.time_begin), double(m.time_end), 0);
  return v;
}

}  // namespace

TEST_CASE("timeline: sections, lanes and a frame's layout on a synthetic trace") {
  auto shown = show(load(kTrace));
  const auto& m = shown->model;
  Timeline& tl = shown->tl;
  REQUIRE(!tl.tiers().tiers.empty());
  CHECK(tl.tiers().tiers[0].kind == TierKind::Iteration);
  CHECK(tl.tiers().tiers[0].size() == 2);
  CHECK(tl.tiers().tiers[0].name_of(0) == "Iteration 1");
  // Annotation first, then the CPU process, then the GPU.
  std::vector<std::string> titles;
  for (const Section& s : tl.sections)
    if (!s.lanes.empty()) titles.push_back(s.title);
  REQUIRE(titles.size() >= 3);
  CHECK(titles[0] == "Annotation");
  CHECK(titles[1].find("python") != std::string::npos);
  CHECK(titles[2].find("GPU 0") == 0);

  FontMetrics f = FontMetrics::monospace(7, 13);
  FrameLayout fl;
  TimeView v = whole(*m, 1000);
  RowState none;
  tl.layout(v, 0, 2000, f, {}, none, fl);
  CHECK(fl.rows.size() >= 5);
  CHECK(fl.rects.size() == fl.items.size());
  CHECK(fl.labels > 0);
  // Every drawn rect can be hit back to its event.
  EventId conv = find(*m, "aten::conv2d");
  bool found = false;
  for (const RowHit& r : fl.rows)
    for (uint32_t k = r.item_begin; k < r.item_end; ++k) {
      const LayoutItem& it = fl.items[k];
      if (it.count != 1) continue;
      ItemRef h = tl.hit(fl, (it.x0 + it.x1) * 0.5f, (r.y0 + r.y1) * 0.5f);
      CHECK(h.valid());
      if (r.kind == LaneKind::Track) CHECK(h.index == it.first);
      if (h == ItemRef::event(conv)) found = true;
    }
  CHECK(found);
  // row_y agrees with the laid-out rows.
  float y = tl.row_y(ItemRef::event(conv), none, 0);
  ItemRef at = tl.hit(fl, v.x_of(double(m->ev.start[conv]) + 1000), y);
  CHECK(at == ItemRef::event(conv));
  // Collapsing a section hides its rows.
  RowState c;
  c.resolve(tl);
  float h0 = tl.content_height(c);
  c.toggle_section(tl, 1);
  CHECK(tl.content_height(c) < h0);
  tl.layout(v, 0, 2000, f, {}, c, fl);
  for (const RowHit& r : fl.rows) CHECK(tl.lanes[r.lane].section != 1);
  // What was collapsed is kept by name: a timeline built again (a recording read again)
  // shows the same section collapsed.
  auto again = show(load(kTrace));
  c.resolve(again->tl);
  CHECK(c.section_collapsed(1));
  CHECK_FALSE(c.section_collapsed(2));
  c.toggle_section(again->tl, 1);
  CHECK(c.collapsed.empty());

  // Pinned lanes stay on top while the rest scrolls: the tiers by default.
  RowState p;
  p.defaults(tl, 2000);
  const float top = tl.pinned_height(p);
  CHECK(top > 0);
  tl.layout(v, 150, 2000, f, {}, p, fl);
  CHECK(fl.pinned_h == doctest::Approx(top));
  bool tier_row = false;
  for (const RowHit& r : fl.rows) {
    if (r.kind == LaneKind::Tier) {
      tier_row = true;
      CHECK(r.y1 <= top + 1e-3f);  // not moved by the scroll
    } else {
      CHECK(r.y0 >= top - 1e-3f);  // never under the pinned rows
    }
  }
  CHECK(tier_row);
  bool pinned = false;
  CHECK(tl.row_y(ItemRef::span(0, 0), p, 150, &pinned) < top);
  CHECK(pinned);
  // Unpinned, the tiers scroll with the rest.
  uint32_t tier_lane = tl.sections[0].lanes[0];
  p.toggle_pin(tl, tier_lane);
  CHECK_FALSE(p.lane_is_pinned(tier_lane));
  CHECK(tl.pinned_height(p) < top);
}

TEST_CASE("drill-down: focus path, related items, children, --focus") {
  auto shown = show(load(kTrace));
  const auto& m = shown->model;
  Timeline& tl = shown->tl;
  EventId kernel = find(*m, "void at::native::conv_kernel<float>(int)");
  EventId conv = find(*m, "aten::conv2d");
  EventId launch = find(*m, "cudaLaunchKernel");
  REQUIRE(kernel != kNoEvent);
  REQUIRE(m->ev.link[kernel] == launch);
  // Iteration 1 ▸ (its phase) ▸ aten::conv2d ▸ cudaLaunchKernel ▸ the kernel.
  std::vector<ItemRef> path = focus_path(tl, ItemRef::event(kernel));
  REQUIRE(path.size() >= 4);
  CHECK(tl.name_of(path[0]) == "Iteration 1");
  CHECK(path[path.size() - 3] == ItemRef::event(conv));
  CHECK(path[path.size() - 2] == ItemRef::event(launch));
  CHECK(path.back() == ItemRef::event(kernel));
  // Selecting the CPU op highlights its launch and its kernel, with a flow arrow.
  Highlight hl;
  std::vector<std::pair<EventId, EventId>> flows;
  WorkFigures conv_work = work_of(tl, ItemRef::event(conv));
  REQUIRE(conv_work.gpu_ops.size() == 1);
  CHECK(conv_work.gpu_ops[0] == kernel);
  CHECK(conv_work.gpu_busy == 300'000);
  CHECK(conv_work.parent == "ProfilerStep#1");
  related_of(tl, ItemRef::event(conv), conv_work.gpu_ops, hl, &flows);
  CHECK(std::binary_search(hl.related.begin(), hl.related.end(), kernel));
  CHECK(std::binary_search(hl.related.begin(), hl.related.end(), launch));
  REQUIRE(flows.size() == 1);
  CHECK(flows[0] == std::make_pair(launch, kernel));
  CHECK(!hl.related_spans.empty());  // Iteration 1 and what lies between
  // Selecting the kernel highlights its launch and the op above it; a GPU op has no parent
  // of the host's clock to take a share of.
  WorkFigures kernel_work = work_of(tl, ItemRef::event(kernel));
  CHECK(kernel_work.parent.empty());
  related_of(tl, ItemRef::event(kernel), kernel_work.gpu_ops, hl, &flows);
  CHECK(std::binary_search(hl.related.begin(), hl.related.end(), conv));
  // The iteration's GPU work: what the annotation counts for its node, with the tree's figures.
  WorkFigures iter = work_of(tl, ItemRef::span(0, 0));
  CHECK(iter.gpu_ops.size() == 2);
  NodeId n = tl.node_of(ItemRef::span(0, 0));
  REQUIRE(n != kNoNode);
  CHECK(iter.gpu_busy == shown->annotation->tree.gpu_busy[n]);
  CHECK(iter.bound == shown->annotation->tree.bound[n]);
  // Levels: the iterations at the top; below an iteration, its tiers' spans.
  std::vector<Block> roots = level_roots(tl);
  REQUIRE(roots.size() == 2);
  CHECK(!children_of(tl, roots[0].ref, nullptr).empty());
  // --focus
  ItemRef r = resolve_focus(tl, "Iteration 1");
  CHECK(r == roots[0].ref);
  ItemRef op = resolve_focus(tl, "Iteration 1/aten::conv2d");
  if (op.kind == ItemRef::Event) CHECK(op == ItemRef::event(conv));
  CHECK_FALSE(resolve_focus(tl, "Iteration 9").valid());
  // The ops below the step's range, reduced by the annotation's sibling rule: relu (100 us of
  // 1 ms) is tiny at a 20% share, but a lone tiny sibling is not grouped.
  ReduceOptions coarse;
  coarse.tiny_share = 0.2;
  EventId step = find(*m, "ProfilerStep#1");
  std::vector<Block> kids = children_of(tl, ItemRef::event(step), nullptr);
  REQUIRE(kids.size() == 2);
  CHECK(tl.name_of(kids[0].ref) == "aten::conv2d");
  std::vector<Block> reduced = children_of(tl, ItemRef::event(step), &coarse);
  REQUIRE(reduced.size() == 2);
  CHECK(reduced[1].kind == SiblingBlock::Single);
  coarse.tiny_share = 0.5;  // now both are tiny: one group of two
  reduced = children_of(tl, ItemRef::event(step), &coarse);
  REQUIRE(reduced.size() == 1);
  CHECK(reduced[0].kind == SiblingBlock::Group);
  CHECK(reduced[0].merged == 2);
}

TEST_CASE("timeline on a real trace: layout at every zoom stays within pixels") {
  std::filesystem::path p = std::filesystem::path(STRATA_TEST_DATA_DIR) / "torch2" / "resnet18-train-h100.pt.trace.json.gz";
  STRATA_SKIP_UNLESS(std::filesystem::exists(p), p.string() + " not found");
  LoadResult r = load_trace(p.string());
  REQUIRE_MESSAGE(r.model, r.error());
  const TraceModel& m = *r.model;
  Annotation a = annotate(m);
  Timeline tl;
  tl.build(m);
  tl.set_annotation(&a);
  CHECK(!tl.tiers().tiers.empty());
  RowState none;
  FontMetrics f = FontMetrics::monospace(7, 13);
  FrameLayout fl;
  TimeView v = whole(m, 1600);
  for (int zoom = 0; zoom < 30; ++zoom) {
    tl.layout(v, 0, 1e6f, f, {}, none, fl);
    size_t rows = fl.rows.size();
    CHECK(rows > 0);
    // At most one item per min_px per row.
    CHECK(fl.items.size() <= rows * size_t(1600 / 1 + 2));
    for (const DrawRect& d : fl.rects) CHECK(d.x1 - d.x0 >= 0.999f);  // never below a pixel
    for (const DrawText& t : fl.texts) CHECK(t.len > 0);
    v.zoom_at(800, 1.6);
  }
  // The view adds far less than 8 bytes per event.
  CHECK(double(tl.view_bytes() + tl.tiers().bytes()) / double(m.ev.size()) < 8.0);
}

TEST_CASE("search: names matched ignoring case, results in id and time order, cancel stops it") {
  LoadResult r = load_trace_bytes("search.json", kTrace);
  REQUIRE(r.model);
  const TraceModel& m = *r.model;
  CHECK(contains_ignoring_case("aten::Conv2d", "CONV"));
  CHECK_FALSE(contains_ignoring_case("relu", "relu_"));
  SearchResult launches = find_by_name(m, "cudalaunch");
  REQUIRE(launches.matches.size() == 2);
  CHECK(std::is_sorted(launches.matches.begin(), launches.matches.end()));
  REQUIRE(launches.by_time.size() == 2);
  CHECK(m.ev.start[launches.by_time[0]] < m.ev.start[launches.by_time[1]]);
  for (EventId e : launches.matches) CHECK(m.strings.view(m.ev.name[e]) == "cudaLaunchKernel");
  CHECK(find_by_name(m, "no such op").matches.empty());
  CHECK(find_by_name(m, "").matches.empty());
  std::atomic<bool> cancel{true};
  SearchResult stopped = find_by_name(m, "a", &cancel);
  CHECK(stopped.cancelled);
  CHECK(stopped.matches.empty());
}
