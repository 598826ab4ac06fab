// Level of detail for one row of spans: the visible part by binary search, runs of sub-pixel
// spans folded into one counted item (Tracy's approach), hit testing on the result.
//
// Input is columnar: `start[i]`, `dur[i]` for i in [begin, end), sorted by start and not
// overlapping (one nesting level of a track, or one tier level). The work is proportional to
// the pixels covered, not to the spans: a folded run is skipped with a binary search.
#pragma once

#include "render/time_view.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace strata::render {

struct SpanColumns {
  const Ns* start = nullptr;
  const Ns* dur = nullptr;
  uint32_t begin = 0, end = 0;  // indices into the columns
};

struct LayoutItem {
  float x0, x1;      // px relative to the view's left edge; x1 - x0 >= 1 (never below a pixel)
  uint32_t first;    // index of the first span (the span itself when count == 1)
  uint32_t count;    // spans folded into this item
};

struct LevelLayoutParams {
  float min_px = 3.0f;  // spans narrower than this start a folded run
};

// The first index in [begin, end) whose span ends after `t` (the first that may be visible).
uint32_t first_visible(const SpanColumns& c, double t);

// Appends the visible items of one level to `out`, in x order.
void layout_level(const SpanColumns& c, const TimeView& v, std::vector<LayoutItem>& out,
                  const LevelLayoutParams& p = {});

// Index into `items` of the item under x (within `slop` px for thin items), or -1.
int hit_test(const LayoutItem* items, size_t n, float x, float slop = 2.0f);
inline int hit_test(const std::vector<LayoutItem>& items, float x, float slop = 2.0f) {
  return hit_test(items.data(), items.size(), x, slop);
}

// What the levels view's blocks are sized by: their wall time (the span the timeline draws), or
// their GPU time (the GPU busy time of their work), so that GPU-heavy items stand out even when
// the host spends as long on light ones.
enum class LevelSizing : uint8_t { Wall, Gpu };
const char* level_sizing_key(LevelSizing s);  // "wall", "gpu" (the layout dump)

struct LevelBlockTime {
  Ns wall = 0, gpu = 0;
};

// The left edges of a row's blocks laid side by side from `x`, each as wide as its share of the
// row's time by `sizing`, then the row's right end (blocks.size() + 1 values). A row whose blocks
// have no GPU time at all is sized by wall time: a row of zero-width blocks would show nothing.
std::vector<float> level_block_edges(const std::vector<LevelBlockTime>& blocks, LevelSizing sizing, float x, float width);

}  // namespace strata::render
