#include "render/level_layout.h"

#include <algorithm>
#include <cmath>

namespace strata::render {

uint32_t first_visible(const SpanColumns& c, double t) {
  // Spans do not overlap, so ends are sorted like starts: find the first end > t.
  uint32_t lo = c.begin, hi = c.end;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (double(c.start[mid] + c.dur[mid]) <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

namespace {

// First index in [lo, hi) with start >= t.
uint32_t lower_start(const Ns* start, uint32_t lo, uint32_t hi, double t) {
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (double(start[mid]) < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// The same, galloping from lo: the answer is usually a few spans away, and probing near lo
// touches memory already in cache instead of halving a range of millions.
uint32_t gallop_start(const Ns* start, uint32_t lo, uint32_t hi, double t) {
  uint32_t step = 1, prev = lo;
  uint32_t probe = lo;
  while (probe < hi && double(start[probe]) < t) {
    prev = probe + 1;
    probe = lo + step;
    step *= 2;
  }
  return lower_start(start, prev, std::min(probe, hi), t);
}

}  // namespace

void layout_level(const SpanColumns& c, const TimeView& v, std::vector<LayoutItem>& out, const LevelLayoutParams& p) {
  if (c.begin >= c.end) return;
  const double t0 = v.t0, t1 = v.t1(), nspp = v.ns_per_px;
  const double min_ns = double(p.min_px) * nspp;
  const float width = v.width_px;
  uint32_t i = first_visible(c, t0);
  while (i < c.end) {
    double s = double(c.start[i]);
    if (s >= t1) break;
    double e = s + double(c.dur[i]);
    if (e - s >= min_ns) {
      float x0 = float((s - t0) / nspp), x1 = float((e - t0) / nspp);
      x0 = std::max(x0, -1.0f);
      x1 = std::min(x1, width + 1.0f);
      out.push_back({x0, std::max(x1, x0 + 1.0f), i, 1});
      ++i;
      continue;
    }
    // A folded run: keep absorbing the spans that start within min_ns of its end.
    double run_end = e;
    uint32_t first = i, j = i + 1;
    while (j < c.end && run_end < t1) {
      uint32_t k = gallop_start(c.start, j, c.end, run_end + min_ns);
      if (k == j) break;  // the next span starts after a visible gap
      uint32_t last = k - 1;
      double ls = double(c.start[last]), le = ls + double(c.dur[last]);
      if (le - ls >= min_ns) {  // only the last can be wide: the others end before it starts
        if (last > j) run_end = std::max(run_end, double(c.start[last - 1] + c.dur[last - 1]));
        j = last;
        break;
      }
      run_end = std::max(run_end, le);
      j = k;
    }
    float x0 = std::max(float((s - t0) / nspp), -1.0f);
    float x1 = std::min(float((run_end - t0) / nspp), width + 1.0f);
    out.push_back({x0, std::max(x1, x0 + 1.0f), first, j - first});
    i = j;
  }
}

int hit_test(const LayoutItem* items, size_t n, float x, float slop) {
  // Items are in x order and do not overlap (except by the 1 px minimum width).
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (items[mid].x1 <= x) lo = mid + 1;
    else hi = mid;
  }
  if (lo < n && items[lo].x0 <= x) return int(lo);
  // Nothing exactly under x: the nearest item within slop.
  int best = -1;
  float best_d = slop;
  for (size_t k : {lo - 1, lo}) {
    if (k >= n) continue;
    float d = x < items[k].x0 ? items[k].x0 - x : x - items[k].x1;
    if (d <= best_d) {
      best_d = d;
      best = int(k);
    }
  }
  return best;
}

const char* level_sizing_key(LevelSizing s) { return s == LevelSizing::Gpu ? "gpu" : "wall"; }

std::vector<float> level_block_edges(const std::vector<LevelBlockTime>& blocks, LevelSizing sizing, float x, float width) {
  Ns gpu_total = 0, wall_total = 0;
  for (const LevelBlockTime& b : blocks) gpu_total += b.gpu, wall_total += b.wall;
  const bool by_gpu = sizing == LevelSizing::Gpu && gpu_total > 0;
  const Ns total = by_gpu ? gpu_total : wall_total;
  std::vector<float> edges;
  edges.reserve(blocks.size() + 1);
  double at = x;  // summed in double: thousands of thin blocks still end at the row's end
  for (const LevelBlockTime& b : blocks) {
    edges.push_back(float(at));
    at += total > 0 ? double(by_gpu ? b.gpu : b.wall) / double(total) * double(width) : 0;
  }
  edges.push_back(float(at));
  return edges;
}

}  // namespace strata::render
