// The timeline's horizontal view: which span of time maps onto which pixels, and the zoom
// and pan math on it. GUI-free; everything here is plain arithmetic, unit-tested.
#pragma once

#include <cstdint>

namespace strata::render {

using Ns = int64_t;

struct TimeView {
  double t0 = 0;          // time (ns) at the left edge of the view
  double ns_per_px = 1;   // zoom
  float width_px = 1;     // width of the timeline area
  double limit_begin = 0, limit_end = 1;  // the trace's extent; the view leaves it by 5% at most

  double t1() const { return t0 + ns_per_px * double(width_px); }
  double span() const { return ns_per_px * double(width_px); }
  float x_of(double t) const { return float((t - t0) / ns_per_px); }
  double t_of(float x) const { return t0 + double(x) * ns_per_px; }

  void set_extent(double begin, double end);
  void set_width(float w);         // keeps t0 and the zoom's time span
  void fit(double begin, double end, float margin_frac = 0.02f);
  void zoom_at(float x, double factor);  // factor > 1 zooms in, keeping the time under x fixed
  void pan_px(float dx);                 // positive dx moves the content right (earlier time)
  void clamp();                          // keep zoom and position sensible
  // The trace grew to [begin, end] (a recording read again): a view showing all of it goes on
  // showing all of it; a zoomed-in view keeps its range.
  void follow_extent(double begin, double end);

  static constexpr double kMinNsPerPx = 0.01;  // 1 ns spans 100 px at the deepest zoom
};

}  // namespace strata::render
