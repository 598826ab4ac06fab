// The What-if tab's picture: one iteration as measured above the same iteration as predicted
// under the chosen scenario, on one time scale: a block per timeline (a title, then a row per
// CPU thread and GPU stream of the first part), a bar per vertex (runs of bars less than a
// pixel apart of one colour merged), coloured by the vertex's kind, bright on that timeline's
// critical path. The app draws the rects and texts and asks `hit` what is under the mouse.
// No GUI calls here.
#pragma once

#include "core/whatif/graph.h"
#include "render/palette.h"
#include "render/timeline.h"

#include <string>
#include <vector>

namespace strata::render {

// One timeline of the graph's vertices: measured (the graph's starts and ends) or replayed.
struct WhatIfTimes {
  const std::vector<Ns>* start = nullptr;
  const std::vector<Ns>* end = nullptr;
  const std::vector<uint8_t>* critical = nullptr;  // per vertex: on this timeline's critical path
};

struct WhatIfInput {
  const whatif::Graph* graph = nullptr;
  WhatIfTimes measured, predicted;
  const std::vector<Iteration>* iterations = nullptr;  // the annotation's (titles); null: none
  std::string scenario;                                // the chosen scenario's name ("unchanged")
};

// Pixel sizes (the app scales them).
struct WhatIfStyle {
  float row_h = 20;       // a lane's row (and a title's)
  float bar_gap = 2;      // under each bar, inside its row
  float label_w = 150;    // the lane names' column, left of the bars
  float block_gap = 6;    // between the measured and the predicted blocks
  float width = 800;      // of the bars' area (the time axis)
};

struct WhatIfText {
  float x, y;
  Rgba colour;
  std::string text;
};

// A vertex's bar as laid out (before merging), for hit testing.
struct WhatIfItem {
  float x0, x1;
  whatif::Vertex vertex;
};

struct WhatIfRow {
  float y0, y1;                    // the whole row (bar and gap)
  uint32_t item_begin, item_end;   // into WhatIfLayout::items
  bool predicted;                  // in the predicted block
};

struct WhatIfLayout {
  // Where the picture starts, relative to (0, 0) at its top left; y grows down.
  std::vector<DrawRect> rects;     // lane backgrounds and bars, back to front
  std::vector<WhatIfText> texts;   // titles and lane names
  std::vector<WhatIfRow> rows;
  std::vector<WhatIfItem> items;
  size_t iteration = 0;            // which iteration (the first complete one)
  Ns measured_t0 = 0, measured_t1 = 0;    // its span as measured, on the graph's clock
  Ns predicted_t0 = 0, predicted_t1 = 0;  // and as predicted
  double px_per_ns = 0;            // one scale for both blocks: the longer span fills `width`
  float bars_x = 0;                // where the bars' area starts (the time axis' zero)
  float block_h = 0;               // a block's height, the gap under it included
  float width = 0, height = 0;     // of the whole picture

  void clear();
  // The vertex whose bar is under (x, y), or kNoVertex (the last one drawn there wins).
  whatif::Vertex hit(float x, float y) const;
};

// The colour of a vertex's bar: by its kind, dimmed when off the critical path.
Rgba whatif_vertex_colour(whatif::VertexKind k, bool critical);

// Lays out the first complete iteration of the graph's first part, measured above predicted.
// `out` is cleared first (its buffers are kept for the next frame).
void layout_whatif(const WhatIfInput& in, const WhatIfStyle& style, WhatIfLayout& out);

}  // namespace strata::render
