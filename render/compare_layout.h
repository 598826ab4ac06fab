// The Compare tab's picture: run A's iteration above run B's, on one time scale from each
// iteration's start (a time axis above both), a row per depth of their phases and layers; each
// layer coloured by how its time changed (slower red, faster green, on one side only blue), the
// selected row's layer outlined on both sides. In wall time (a run without GPU work) a layer's
// bar starts where what ran before it in its parent ended, as the diff counts its time. The
// app draws the rects and texts and asks `hit` what is under the mouse. No GUI calls here.
#pragma once

#include "core/diff/diff.h"
#include "render/labels.h"
#include "render/legend.h"
#include "render/palette.h"
#include "render/timeline.h"

#include <string>
#include <vector>

namespace strata::render {

struct CompareInput {
  const Diff* diff = nullptr;
  const AnnotationTree* tree_a = nullptr;
  const AnnotationTree* tree_b = nullptr;
  NodeId iteration_a = kNoNode, iteration_b = kNoNode;  // the iterations drawn (the diff's shown ones)
  int64_t selected_row = -1;                            // into diff->layers; -1: none
};

// Pixel sizes (the app scales them).
struct CompareStyle {
  float row_h = 18;      // a depth's row: the bar and the gap under it
  float bar_gap = 2;
  float outline = 2;     // the selection's outline
  float axis_h = 18;     // the time axis above the blocks
  float label_w = 90;    // the "A" / "B" titles' column, left of the bars
  float block_gap = 8;   // between A's block and B's
  float width = 800;     // of the bars' area (the time axis)
  int max_depth = 8;     // layer rows below the phases, at most
  FontMetrics font = FontMetrics::monospace(7, 13);  // what fits in a bar
};

struct CompareText {
  float x, y;
  Rgba colour;
  std::string text;
  bool title = false;  // "A" or "B": the bold font
};

// A phase's or a layer's bar (its lead-in included), for hit testing.
struct CompareItem {
  float x0, y0, x1, y1;
  bool b;        // in B's block
  NodeId node;   // in that side's tree
  int64_t row;   // its row in diff->layers; -1: none (a phase)
  Ns lead_in;    // wall time: from the end of what ran before it in its parent to its start, counted as its own
};

struct CompareLayout {
  // Relative to (0, 0) at the picture's top left; y grows down.
  std::vector<DrawRect> rects;     // row backgrounds, grid lines, bars, then the selection's outlines (kSelected)
  std::vector<CompareText> texts;  // axis labels, titles and the labels that fit in their bars
  std::vector<CompareItem> items;  // in tree order per side, A's first
  double px_per_ns = 0;            // one scale for both: the longer iteration fills `width`
  float bars_x = 0;                // where the time axis' zero is
  float block_y[2] = {0, 0};       // the top of A's block and of B's
  int rows = 0;                    // per block: the phases' row and the layer depths drawn
  float width = 0, height = 0;     // of the whole picture
  Ns span_a = 0, span_b = 0;       // the iterations' lengths

  void clear();
  // The item under (x, y), or null.
  const CompareItem* hit(float x, float y) const;
};

// A layer row's colour by its change: red slower, green faster (saturating at ±50% of the
// larger side), grey unchanged, blue on one side only.
Rgba change_colour(const DiffRow& r);
// What those colours mean, for a legend.
std::vector<LegendEntry> change_legend();

// Lays out the two iterations; `out` is cleared first (its buffers are kept for the next frame).
void layout_compare(const CompareInput& in, const CompareStyle& style, CompareLayout& out);

}  // namespace strata::render
