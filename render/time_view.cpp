#include "render/time_view.h"

#include <algorithm>
#include <cmath>

namespace strata::render {

void TimeView::set_extent(double begin, double end) {
  limit_begin = begin;
  limit_end = std::max(end, begin + 1);
}

void TimeView::set_width(float w) {
  double s = span();
  width_px = std::max(w, 1.0f);
  ns_per_px = s / double(width_px);
  clamp();
}

void TimeView::fit(double begin, double end, float margin_frac) {
  if (end <= begin) end = begin + 1;
  double m = (end - begin) * double(margin_frac);
  t0 = begin - m;
  ns_per_px = (end - begin + 2 * m) / double(width_px);
  clamp();
}

void TimeView::follow_extent(double begin, double end) {
  const bool whole = t0 <= limit_begin && t1() >= limit_end;
  set_extent(begin, end);
  if (whole) fit(begin, end);
  else clamp();
}

void TimeView::zoom_at(float x, double factor) {
  if (!(factor > 0)) return;
  double t = t_of(x);
  ns_per_px /= factor;
  if (ns_per_px < kMinNsPerPx) ns_per_px = kMinNsPerPx;
  double max_nspp = (limit_end - limit_begin) * 1.5 / double(width_px);
  if (ns_per_px > max_nspp) ns_per_px = max_nspp;
  t0 = t - double(x) * ns_per_px;
  clamp();
}

void TimeView::pan_px(float dx) {
  t0 -= double(dx) * ns_per_px;
  clamp();
}

void TimeView::clamp() {
  if (!(width_px >= 1)) width_px = 1;
  double extent = limit_end - limit_begin;
  double max_nspp = extent * 1.5 / double(width_px);
  if (!(ns_per_px >= kMinNsPerPx)) ns_per_px = kMinNsPerPx;
  if (ns_per_px > max_nspp) ns_per_px = std::max(max_nspp, kMinNsPerPx);
  // The view stays on the trace, with a margin of 5% of it at either end (no time before the
  // trace's start); a view wider than the trace is centred on it.
  double s = span();
  double lo = limit_begin - s * 0.05, hi = limit_end - s * 0.95;
  t0 = lo <= hi ? std::clamp(t0, lo, hi) : (limit_begin + limit_end - s) * 0.5;
}

}  // namespace strata::render
