// The Compare tab's picture (render/compare_layout): two runs' iterations on one time scale, a
// row per depth, layers coloured by their change, the selected diff row outlined on both sides,
// hit testing; on a real trace against itself and on the CPU pairs of tests/data/diff-pairs.
#include "annotated_run.h"
#include "core/diff/diff.h"
#include "core/loader.h"
#include "render/compare_layout.h"
#include "test_data.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <memory>

using namespace strata;
using namespace strata::render;

namespace {

using Run = test::AnnotatedRun;
Run open(const std::filesystem::path& p) { return test::open_annotated(p); }

Run open_pair(const std::string& file) { return open(test::test_data_dir() / "diff-pairs" / file); }

NodeId iteration_node(const Annotation& a, int64_t shown) {
  return shown >= 0 && size_t(shown) < a.iterations.size() ? a.iterations[size_t(shown)].node : kNoNode;
}

CompareInput input(const Diff& d, const Run& a, const Run& b, int64_t selected = -1) {
  CompareInput in;
  in.diff = &d;
  in.tree_a = &a.annotation.tree;
  in.tree_b = &b.annotation.tree;
  in.iteration_a = iteration_node(a.annotation, d.shown_a);
  in.iteration_b = iteration_node(b.annotation, d.shown_b);
  in.selected_row = selected;
  return in;
}

std::vector<CompareItem> side(const CompareLayout& l, bool b) {
  std::vector<CompareItem> out;
  for (const CompareItem& i : l.items)
    if (i.b == b) out.push_back(i);
  return out;
}

// The outline rects (kSelected) in A's block and in B's.
std::pair<size_t, size_t> outlines(const CompareLayout& l) {
  size_t a = 0, b = 0;
  for (const DrawRect& r : l.rects)
    if (r.flags & kSelected) (r.y0 >= l.block_y[1] ? b : a) += 1;
  return {a, b};
}

}  // namespace

TEST_CASE("compare layout: a trace against itself draws the same bars in both blocks, all unchanged") {
  const std::filesystem::path p = test::find_trace("hotline-resnet50-rtx3090.pt.trace.json.gz");
  STRATA_SKIP_UNLESS(!p.empty(), "real trace not found: hotline-resnet50-rtx3090.pt.trace.json.gz");
  const Run a = open(p), b = open(p);
  const Diff d = diff_runs(*a.model, a.annotation, *b.model, b.annotation);
  REQUIRE(d.shown_a >= 0);
  CompareStyle st;
  st.width = 1000;
  CompareLayout l;
  layout_compare(input(d, a, b), st, l);
  CHECK(l.span_a == l.span_b);
  CHECK(l.px_per_ns == doctest::Approx(1000.0 / double(l.span_a)));
  CHECK(l.rows >= 2);  // the phases and at least one layer depth
  CHECK(l.block_y[1] > l.block_y[0] + float(l.rows) * st.row_h - 1);
  const std::vector<CompareItem> ia = side(l, false), ib = side(l, true);
  REQUIRE(ia.size() > 10);
  REQUIRE(ia.size() == ib.size());
  const float shift = l.block_y[1] - l.block_y[0];
  size_t layers = 0;
  for (size_t i = 0; i < ia.size(); ++i) {
    CHECK(ia[i].x0 == ib[i].x0);
    CHECK(ia[i].x1 == ib[i].x1);
    CHECK(ib[i].y0 == doctest::Approx(ia[i].y0 + shift));
    CHECK(ia[i].row == ib[i].row);
    CHECK(ia[i].x0 >= l.bars_x);
    CHECK(ia[i].x1 <= l.bars_x + st.width + 1);
    if (ia[i].row >= 0) {
      ++layers;
      CHECK(change_colour(d.layers[size_t(ia[i].row)]) == change_colour(DiffRow{"x", "x", 5, 5, {}, {}, {}}));
    }
  }
  CHECK(layers > 10);  // every layer drawn has its diff row
}

TEST_CASE("compare layout: the selected row is outlined on both sides, a row on one side only on that side") {
  const Run a = open_pair("added-layer-a.json.gz"), b = open_pair("added-layer-b.json.gz");
  const Diff d = diff_runs(*a.model, a.annotation, *b.model, b.annotation);
  REQUIRE(!d.layers.empty());
  CompareLayout l;
  layout_compare(input(d, a, b), {}, l);
  CHECK(outlines(l) == std::pair<size_t, size_t>{0, 0});
  CHECK(l.span_b > l.span_a);  // the added layer made B's iteration longer: it fills the width
  CHECK(l.px_per_ns == doctest::Approx(800.0 / double(l.span_b)));

  // The first row aligned on both sides and drawn in both iterations.
  int64_t both = -1;
  for (const CompareItem& i : side(l, false))
    if (i.row >= 0 && !d.layers[size_t(i.row)].name_b.empty() &&
        std::any_of(l.items.begin(), l.items.end(), [&](const CompareItem& j) { return j.b && j.row == i.row; })) {
      both = i.row;
      break;
    }
  REQUIRE(both >= 0);
  layout_compare(input(d, a, b, both), {}, l);
  const auto [in_a, in_b] = outlines(l);
  CHECK(in_a >= 4);
  CHECK(in_b >= 4);
  // The outline sits on the row's bar, and is drawn after every bar.
  const CompareItem* bar = nullptr;
  for (const CompareItem& i : l.items)
    if (!i.b && i.row == both) bar = &i;
  REQUIRE(bar);
  CHECK(std::any_of(l.rects.begin(), l.rects.end(), [&](const DrawRect& r) {
    return (r.flags & kSelected) && r.x0 == bar->x0 && r.y0 == bar->y0 && r.x1 == bar->x1;
  }));
  CHECK((l.rects.back().flags & kSelected) != 0);

  // The top row is the layer only B has: outlined in B alone, coloured "one side".
  const DiffRow& top = d.layers.front();
  REQUIRE(top.name_a.empty());
  layout_compare(input(d, a, b, 0), {}, l);
  const auto [top_a, top_b] = outlines(l);
  CHECK(top_a == 0);
  CHECK(top_b >= 4);
  CHECK(change_colour(top) == change_legend().back().colour);
}

TEST_CASE("compare layout: slower and faster layers take the legend's colours, saturating at half the time") {
  const std::vector<LegendEntry> legend = change_legend();
  REQUIRE(legend.size() == 4);
  CHECK(change_colour(DiffRow{"x", "x", 100, 200, {}, {}, {}}) == legend[0].colour);  // +100%: full
  CHECK(change_colour(DiffRow{"x", "x", 200, 100, {}, {}, {}}) == legend[1].colour);  // -50%: full
  CHECK(change_colour(DiffRow{"x", "x", 100, 100, {}, {}, {}}) == legend[2].colour);
  CHECK(change_colour(DiffRow{"x", "", 100, {}, {}, {}, "only in A"}) == legend[3].colour);
  const Rgba slight = change_colour(DiffRow{"x", "x", 100, 110, {}, {}, {}});  // +10% of 110: part way
  CHECK(slight != legend[0].colour);
  CHECK(slight != legend[2].colour);
}

TEST_CASE("compare layout: hit finds the bar under a point, nothing in the titles or between the blocks") {
  const Run a = open_pair("added-layer-a.json.gz"), b = open_pair("added-layer-b.json.gz");
  const Diff d = diff_runs(*a.model, a.annotation, *b.model, b.annotation);
  CompareLayout l;
  layout_compare(input(d, a, b), {}, l);
  REQUIRE(!l.items.empty());
  for (const CompareItem& i : l.items) {
    const CompareItem* h = l.hit((i.x0 + i.x1) / 2, (i.y0 + i.y1) / 2);
    REQUIRE(h);
    CHECK(h->b == i.b);
    CHECK(h->y0 == i.y0);  // the same row (a neighbour under a pixel wide may share the point)
  }
  CHECK(l.hit(l.bars_x / 2, l.block_y[0] + 5) == nullptr);                   // the "A" title
  CHECK(l.hit(l.bars_x + 10, l.block_y[1] - 3) == nullptr);                  // the gap between the blocks
  CHECK(l.hit(l.bars_x + 10, l.height + 5) == nullptr);                      // under the picture
  // The added layer's rows are drawn on B's side only, blue.
  size_t one_side = 0;
  for (const CompareItem& i : l.items)
    if (i.row >= 0 && d.layers[size_t(i.row)].name_a.empty()) {
      ++one_side;
      CHECK(i.b);
    }
  CHECK(one_side >= 3);  // its Conv, BatchNorm and ReLU
}

TEST_CASE("compare layout: no diff, no trees or no iterations lay out nothing") {
  CompareLayout l;
  l.items.push_back({0, 0, 10, 10, false, 0, -1, 0});
  layout_compare({}, {}, l);
  CHECK(l.items.empty());
  CHECK(l.rects.empty());
  CHECK(l.texts.empty());
  CHECK(l.height == 0);
  CHECK(l.hit(5, 5) == nullptr);
  const Diff d;
  const AnnotationTree t;
  CompareInput in;
  in.diff = &d;
  in.tree_a = in.tree_b = &t;
  layout_compare(in, {}, l);
  CHECK(l.items.empty());
  CHECK(l.rects.empty());
}
