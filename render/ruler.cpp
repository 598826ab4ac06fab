#include "render/ruler.h"

#include <cmath>
#include <cstdio>

namespace strata::render {

double nice_step(double ns) {
  if (!(ns > 0)) return 1;
  double p = std::pow(10.0, std::floor(std::log10(ns)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (p * m >= ns * (1 - 1e-9)) return p * m;
  return p * 10;
}

namespace {

struct Unit { double scale; const char* name; };

Unit unit_for(double magnitude) {
  if (magnitude >= 1e9) return {1e9, "s"};
  if (magnitude >= 1e6) return {1e6, "ms"};
  if (magnitude >= 1e3) return {1e3, "\xC2\xB5s"};  // µs
  return {1, "ns"};
}

}  // namespace

namespace {

// `ns` in unit `u`, with the decimals it takes to tell multiples of `step` apart.
std::string format_in(double ns, double step, Unit u) {
  double s = step / u.scale;
  int decimals = 0;
  while (decimals < 9 && std::fabs(s - std::round(s)) > 1e-6 * std::max(1.0, s)) {
    s *= 10;
    ++decimals;
  }
  char buf[64];
  double v = ns / u.scale;
  if (std::fabs(v) < 0.5 * std::pow(10.0, -decimals)) v = 0;
  std::snprintf(buf, sizeof buf, "%.*f %s", decimals, v, u.name);
  return buf;
}

}  // namespace

std::string format_time(double ns, double step) { return format_in(ns, step, unit_for(std::max(std::fabs(ns), step))); }

Ruler make_ruler(const TimeView& v, double origin, float min_major_px) {
  Ruler r;
  r.major_step = nice_step(v.ns_per_px * double(min_major_px));
  // Minor ticks: a fifth of a 1- or 5-step, a half of a 2-step.
  double lead = r.major_step / std::pow(10.0, std::floor(std::log10(r.major_step)));
  r.minor_step = r.major_step / (std::fabs(lead - 2) < 1e-6 ? 4 : 5);
  // Labels longer than ~7 digits are hard to read: switch to offsets from a base.
  double rel0 = v.t0 - origin;
  if (rel0 / r.major_step > 2000) {
    double coarse = r.major_step * 1000;
    r.base = std::floor(rel0 / coarse) * coarse;
    r.base_label = format_time(r.base, std::max(coarse, 1.0));
  }
  // One unit for every label, the one the largest label in view needs ("+131.5 µs", not
  // "+131500 ns" beside "+2.5 µs").
  const double last_label = std::max(std::fabs(v.t0 - origin - r.base), std::fabs(v.t1() - origin - r.base));
  const Unit unit = unit_for(std::max(last_label, r.major_step));
  double first_i = std::floor((v.t0 - origin) / r.minor_step);
  double end = v.t1();
  for (int i = 0; i < 4096; ++i) {
    double rel = (first_i + i) * r.minor_step;
    double t = origin + rel;
    if (t > end) break;
    double q = rel / r.major_step;
    bool major = std::fabs(q - std::round(q)) < 1e-6;
    float x = v.x_of(t);
    if (x < -1) continue;
    Tick tk{t, x, major, {}};
    if (major) {
      double at = std::round(q) * r.major_step;
      tk.label = r.base_label.empty() ? format_in(at, r.major_step, unit) : "+" + format_in(at - r.base, r.major_step, unit);
    }
    r.ticks.push_back(std::move(tk));
  }
  return r;
}

}  // namespace strata::render
