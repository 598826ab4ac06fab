// Time ruler ticks with adaptive units (ns, µs, ms, s). Durations are written by
// core/text_format.h's format_duration, the one the CLI uses too.
#pragma once

#include "render/time_view.h"

#include <string>
#include <vector>

namespace strata::render {

struct Tick {
  double t;      // absolute time, ns
  float x;       // px from the view's left edge
  bool major;    // majors carry a label
  std::string label;
};

struct Ruler {
  double minor_step = 0, major_step = 0;  // ns
  std::vector<Tick> ticks;
  // Deep in a long trace, labels are offsets from `base` ("+250 ns"), which is shown once
  // (`base_label`, "45.015 693 s"); otherwise base_label is empty and labels are absolute.
  double base = 0;
  std::string base_label;
};

// Majors are at least `min_major_px` apart (room for a label); minors divide them in 5 or 2.
// Labels give time since `origin` (the trace start) in the unit that suits the step.
Ruler make_ruler(const TimeView& v, double origin, float min_major_px = 90.0f);

// A time offset in the unit its size needs, with enough decimals to tell ticks `step` apart
// ("12.35 ms", "1.5 µs").
std::string format_time(double ns, double step);
// The 1-2-5 step at or above `ns`.
double nice_step(double ns);

}  // namespace strata::render
