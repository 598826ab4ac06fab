#include "render/roofline_layout.h"

#include "core/text_format.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <unordered_map>

namespace strata::render {

namespace {

constexpr const char* kUnknown = "\xE2\x80\x93";  // "–": a figure the trace does not give
constexpr Rgba kRoofColour = rgba(235, 235, 240), kTensorRoofColour = rgba(255, 200, 90), kLabel = rgba(225, 226, 232);

bool matrix_class(KernelClass c) { return c == KernelClass::Gemm || c == KernelClass::Conv || c == KernelClass::Attention; }

std::string upper(std::string s) {
  for (char& c : s) c = char(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// "1 GFLOP/s", "10 TFLOP/s": a decade's label on the y axis.
std::string decade_text(double v, const char* unit) {
  static constexpr const char* kPrefix[] = {"", "k", "M", "G", "T", "P", "E"};
  const int e = int(std::lround(std::log10(v)));
  const int p = std::clamp(e >= 0 ? e / 3 : -1, 0, int(std::size(kPrefix)) - 1);
  return strprintf("%g %s%s", v / std::pow(10.0, 3 * p), kPrefix[p], unit);
}

double floor_decade(double v) { return std::pow(10.0, std::floor(std::log10(v))); }
double ceil_decade(double v) { return std::pow(10.0, std::ceil(std::log10(v))); }

// The device whose roofs are drawn: of those with a roofline, the one with most modelled
// kernel time; `fallback` (for saying which device has none) the one with most time of all.
const DeviceRoofline* roof_device(const Efficiency& e, const DeviceRoofline*& fallback) {
  std::unordered_map<int32_t, Ns> time;
  for (const KernelWork& k : e.kernels)
    if (k.source != WorkSource::None) time[k.device] += k.time;
  const DeviceRoofline* best = nullptr;
  fallback = nullptr;
  for (const DeviceRoofline& d : e.devices) {
    const Ns t = time.count(d.device) ? time[d.device] : 0;
    if (!fallback || t > time[fallback->device]) fallback = &d;
    if (d.peaks.known() && (!best || t > time[best->device])) best = &d;
  }
  return best;
}

// The tensor (or matrix) roof: the peak most of the matrix kernels' time on `device` ran
// against, named by their number format; FP16's when no matrix kernel has a roof.
std::pair<double, std::string> tensor_roof(const Efficiency& e, const DevicePeaks& p, int32_t device) {
  std::map<std::pair<double, Precision>, Ns> time;
  for (const KernelWork& k : e.kernels)
    if (k.device == device && matrix_class(k.cls) && k.peak > 0) time[{k.peak, k.precision}] += k.time;
  const char* units = p.name.starts_with("AMD") ? " matrix " : " tensor ";
  auto top = std::max_element(time.begin(), time.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  if (top == time.end()) return {p.fp16, std::string("FP16") + units};
  const auto [peak, precision] = top->first;
  std::string format = precision == Precision::FP32 && peak == p.tf32 ? "TF32" : upper(precision_name(precision));
  return {peak, format + units};
}

// Where a class's point cannot go on log axes, and why (empty: it can).
std::string unplottable(const EfficiencyStat& s, KernelClass c) {
  if (c == KernelClass::Communication) return "the network's time, not a roofline's";
  if (s.modelled == 0) return "no work known";
  if (s.flops <= 0) return "no FLOPs";
  if (s.bytes <= 0) return "no bytes";
  return {};
}

KernelClass class_named(const std::string& name) {
  for (size_t c = 0; c < size_t(KernelClass::Count); ++c)
    if (name == kernel_class_name(KernelClass(c))) return KernelClass(c);
  return KernelClass::Other;
}

std::string no_work_reason(const Efficiency& e) {
  if (e.kernels.empty()) return "no GPU kernels in this trace";
  for (const UnmodelledOp& u : e.unmodelled)
    if (u.why == WorkModel::NoShapes) return "no kernel's work is known: the trace recorded no shapes (record_shapes=True)";
  if (!e.unmodelled.empty()) return "no kernel's work is known: no op that launched a kernel is one the work model knows";
  return "no kernel's work is known: no kernel has a CPU op around its launch";
}

struct Box {
  float x0, y0, x1, y1;
};

float overlap(const Box& a, const Box& b) {
  const float w = std::min(a.x1, b.x1) - std::max(a.x0, b.x0), h = std::min(a.y1, b.y1) - std::max(a.y0, b.y0);
  return w > 0 && h > 0 ? w * h : 0;
}

// Each point's label where it covers least of what is drawn (the roofs' labels and flat lines,
// the points, the labels placed before it) and stays inside the plot.
void place_labels(const RooflineStyle& st, std::vector<Box> taken, RooflineLayout& out) {
  for (const RooflinePoint& p : out.points) taken.push_back({p.x - p.radius, p.y - p.radius, p.x + p.radius, p.y + p.radius});
  const Box plot{out.plot_x0, out.plot_y0, out.plot_x1, out.plot_y1};
  for (RooflinePoint& p : out.points) {
    const float w = st.font.width(p.name), h = st.font.height, r = p.radius + 3, d = p.radius * 0.7f + 2;
    const std::pair<float, float> at[] = {
        {p.x + r, p.y - h / 2}, {p.x - r - w, p.y - h / 2}, {p.x - w / 2, p.y - r - h}, {p.x - w / 2, p.y + r},
        {p.x + d, p.y - d - h}, {p.x + d, p.y + d},        {p.x - d - w, p.y - d - h}, {p.x - d - w, p.y + d}};
    float best = -1;
    for (const auto& [x, y] : at) {
      const Box b{x, y, x + w, y + h};
      float cost = (w * h - overlap(b, plot)) * 4;  // outside the plot is worse than over something
      for (const Box& t : taken) cost += overlap(b, t);
      if (best < 0 || cost < best) best = cost, p.label_x = x, p.label_y = y;
      if (cost == 0) break;
    }
    taken.push_back({p.label_x, p.label_y, p.label_x + w, p.label_y + h});
    out.texts.push_back({p.label_x, p.label_y, kLabel, p.name});
  }
}

// The decades of [lo, hi] as ticks: every one, or every n-th where a decade is narrower than a label (`label_px`).
template <class Text>
void ticks(double lo, double hi, float px_per_decade, float label_px, Text text, float (RooflineLayout::*at)(double) const,
           RooflineLayout& out, std::vector<RooflineTick>& into) {
  const int step = std::max(1, int(std::ceil(label_px / std::max(px_per_decade, 1.0f))));
  const int decades = int(std::lround(std::log10(hi / lo)));
  for (int i = 0; i <= decades; i += step) {
    const double v = lo * std::pow(10.0, i);
    into.push_back({(out.*at)(v), text(v)});
  }
}

void layout_roofs(const DeviceRoofline& d, const Efficiency& e, RooflineLayout& out) {
  const DevicePeaks& p = d.peaks;
  out.device = p.name;
  out.bandwidth = p.bandwidth;
  out.roofs.push_back({"FP32 vector " + strprintf("%.1f TFLOP/s", p.fp32 / 1e12), p.fp32, p.fp32 / p.bandwidth, 0, 0, 0, 0, 0, kRoofColour});
  const auto [peak, name] = tensor_roof(e, p, d.device);
  if (peak > p.fp32 * 1.001)
    out.roofs.push_back({name + strprintf("%.1f TFLOP/s", peak / 1e12), peak, peak / p.bandwidth, 0, 0, 0, 0, 0, kTensorRoofColour});
}

// The axes: whole decades around the points and the roofs' ridges and peaks, three at least
// up the y axis so the memory slope shows.
void layout_axes(const RooflineStyle& st, RooflineLayout& out) {
  double x_lo = INFINITY, x_hi = 0, y_lo = INFINITY, y_hi = 0;
  for (const RooflinePoint& p : out.points) {
    x_lo = std::min(x_lo, p.intensity), x_hi = std::max(x_hi, p.intensity);
    y_lo = std::min(y_lo, p.flop_per_s), y_hi = std::max(y_hi, p.flop_per_s);
  }
  for (const RooflineRoof& r : out.roofs) x_lo = std::min(x_lo, r.ridge), x_hi = std::max(x_hi, r.ridge), y_hi = std::max(y_hi, r.peak);
  out.x_min = floor_decade(x_lo / 2), out.x_max = ceil_decade(x_hi * 2);
  out.y_max = ceil_decade(y_hi * 1.5), out.y_min = std::min(floor_decade(y_lo / 2), out.y_max / 1e3);
  out.width = st.width, out.height = st.height;
  out.plot_x0 = st.axis_left, out.plot_y0 = st.axis_top;
  out.plot_x1 = std::max(out.plot_x0 + 1, st.width - st.pad), out.plot_y1 = std::max(out.plot_y0 + 1, st.height - st.axis_bottom);
  const float x_decade = (out.plot_x1 - out.plot_x0) / float(std::log10(out.x_max / out.x_min));
  const float y_decade = (out.plot_y1 - out.plot_y0) / float(std::log10(out.y_max / out.y_min));
  ticks(out.x_min, out.x_max, x_decade, st.font.width("0.0001") + 12, [](double v) { return strprintf("%g", v); },
        &RooflineLayout::x_of, out, out.x_ticks);
  ticks(out.y_min, out.y_max, y_decade, st.font.height * 1.5f, [](double v) { return decade_text(v, "FLOP/s"); },
        &RooflineLayout::y_of, out, out.y_ticks);
  const std::string title = "arithmetic intensity (FLOP/byte)";
  out.texts.push_back({(out.plot_x0 + out.plot_x1 - st.font.width(title)) / 2, out.plot_y1 + st.font.height + 10, kLabel, title});
  out.texts.push_back({0, 0, kLabel, "achieved FLOP/s"});
}

// The roofs' lines clipped to the plot, and their labels (each peak along its flat part, above
// or below it, at its right end or after the ridge: the first place clear of the points and the
// other labels; the bandwidth beside the slope); the boxes they take, for the points' labels.
std::vector<Box> place_roofs(const RooflineStyle& st, RooflineLayout& out) {
  std::vector<Box> taken, points;
  for (const RooflinePoint& p : out.points) points.push_back({p.x - p.radius, p.y - p.radius, p.x + p.radius, p.y + p.radius});
  const float h = st.font.height;
  for (RooflineRoof& r : out.roofs) {
    const double x0 = std::max(out.x_min, out.y_min / out.bandwidth);  // the slope enters at the left or the bottom
    r.x0 = out.x_of(x0), r.y0 = out.y_of(x0 * out.bandwidth);
    r.xr = out.x_of(r.ridge), r.yr = out.y_of(r.peak), r.x1 = out.plot_x1;
    const float w = st.font.width(r.label), above = std::max(out.plot_y0, r.yr - h - 3), below = r.yr + 3;
    const std::pair<float, float> at[] = {{r.x1 - w - 4, above}, {r.x1 - w - 4, below}, {r.xr + 6, above}, {r.xr + 6, below}};
    Box b{at[0].first, at[0].second, at[0].first + w, at[0].second + h};
    for (const auto& [x, y] : at) {
      const Box c{x, y, x + w, y + h};
      if (std::none_of(points.begin(), points.end(), [&](const Box& p) { return overlap(c, p) > 0; }) &&
          std::none_of(taken.begin(), taken.end(), [&](const Box& t) { return overlap(c, t) > 0; })) {
        b = c;
        break;
      }
    }
    out.texts.push_back({b.x0, b.y0, r.colour, r.label});
    taken.push_back(b);
    taken.push_back({r.xr, r.yr - 2, r.x1, r.yr + 2});
  }
  if (out.roofs.empty()) return taken;
  // Half-way up the lowest roof's slope, the text above and left of it: clear of the line,
  // which rises to the right.
  const RooflineRoof& low = out.roofs.front();
  const float sx = (low.x0 + low.xr) / 2, sy = (low.y0 + low.yr) / 2;
  const std::string text = strprintf("memory %.2f TB/s", out.bandwidth / 1e12);
  const float w = st.font.width(text), x = std::max(out.plot_x0 + 2, sx - w - 4), y = std::max(out.plot_y0, sy - h - 4);
  out.texts.push_back({x, y, kRoofColour, text});
  taken.push_back({x, y, x + w, y + h});
  return taken;
}

}  // namespace

void RooflineLayout::clear() { *this = RooflineLayout(); }

float RooflineLayout::x_of(double intensity) const {
  return plot_x0 + float(std::log10(intensity / x_min) / std::log10(x_max / x_min)) * (plot_x1 - plot_x0);
}

float RooflineLayout::y_of(double flop_per_s) const {
  return plot_y1 - float(std::log10(flop_per_s / y_min) / std::log10(y_max / y_min)) * (plot_y1 - plot_y0);
}

int RooflineLayout::hit(float x, float y) const {
  for (size_t i = points.size(); i-- > 0;) {
    const RooflinePoint& p = points[i];
    const float r = p.radius + 3;  // a small point is still easy to catch
    if ((x - p.x) * (x - p.x) + (y - p.y) * (y - p.y) <= r * r) return int(i);
  }
  return -1;
}

Rgba kernel_class_colour(KernelClass c) {
  // Okabe & Ito's colour-blind-safe hues, greys for what moves data only or is unclassified.
  switch (c) {
    case KernelClass::Gemm: return rgba(230, 159, 0);
    case KernelClass::Conv: return rgba(86, 180, 233);
    case KernelClass::Attention: return rgba(204, 121, 167);
    case KernelClass::Elementwise: return rgba(0, 158, 115);
    case KernelClass::Reduction: return rgba(240, 228, 66);
    case KernelClass::Norm: return rgba(213, 94, 0);
    case KernelClass::Communication: return rgba(0, 114, 178);
    case KernelClass::Copy: return rgba(150, 150, 150);
    case KernelClass::Other:
    case KernelClass::Count: break;
  }
  return rgba(190, 180, 215);
}

void layout_roofline(const Efficiency& e, const RooflineStyle& st, RooflineLayout& out) {
  out.clear();
  if (e.total.modelled == 0) return void(out.empty = no_work_reason(e));
  const DeviceRoofline* fallback = nullptr;
  const DeviceRoofline* d = roof_device(e, fallback);
  if (d) layout_roofs(*d, e, out);
  else out.no_roof = fallback ? "device " + fallback->trace_name + " is not in the roofline table: no roof is drawn"
                              : "the trace names no device (no deviceProperties): no roof is drawn";

  std::vector<double> peak(size_t(KernelClass::Count), 0);
  std::vector<const KernelWork*> longest(size_t(KernelClass::Count), nullptr);
  for (const KernelWork& k : e.kernels) {
    peak[size_t(k.cls)] = std::max(peak[size_t(k.cls)], k.peak);
    if (!longest[size_t(k.cls)] || k.time > longest[size_t(k.cls)]->time) longest[size_t(k.cls)] = &k;
  }
  Ns most = 1;
  for (size_t i = 0; i < e.classes.size(); ++i) {
    const EfficiencyStat& s = e.classes[i];
    const KernelClass c = class_named(s.name);
    if (std::string why = unplottable(s, c); !why.empty()) {
      out.unplotted.push_back(s.name + ": " + why);
      continue;
    }
    RooflinePoint p;
    p.name = s.name, p.cls = c, p.stat = i, p.colour = kernel_class_colour(c);
    p.intensity = s.intensity(), p.flop_per_s = s.flop_per_s(), p.peak = peak[size_t(c)];
    p.roof = p.peak > 0 && out.bandwidth > 0 ? std::min(p.peak, out.bandwidth * p.intensity) : 0;
    p.longest = longest[size_t(c)] ? longest[size_t(c)]->kernel : kNoEvent;
    most = std::max(most, s.time);
    out.points.push_back(std::move(p));
  }
  if (out.points.empty()) return void(out.empty = "no kernel class has both FLOPs and bytes to place on the plot");
  std::stable_sort(out.points.begin(), out.points.end(),
                   [&](const RooflinePoint& a, const RooflinePoint& b) { return e.classes[a.stat].time > e.classes[b.stat].time; });
  layout_axes(st, out);
  for (RooflinePoint& p : out.points) {
    p.x = out.x_of(p.intensity), p.y = out.y_of(p.flop_per_s);
    p.radius = st.min_radius + (st.max_radius - st.min_radius) * float(std::sqrt(double(e.classes[p.stat].time) / double(most)));
  }
  place_labels(st, place_roofs(st, out), out);
}

EfficiencyCells efficiency_cells(const EfficiencyStat& s) {
  EfficiencyCells c;
  c.time = format_duration(s.time);
  // Three significant digits: a small rate (0.0004 TFLOP/s) is not rounded to a false "0.00".
  auto rate = [](double v) { return v > 0 && v < 1e-3 ? std::string("<0.001") : strprintf(v >= 100 ? "%.0f" : "%.3g", v); };
  c.tflops = s.modelled_time > 0 ? rate(s.flop_per_s() / 1e12) : kUnknown;
  c.tbps = s.modelled_time > 0 ? rate(s.bytes_per_s() / 1e12) : kUnknown;
  c.intensity = s.bytes > 0 ? rate(s.intensity()) : kUnknown;
  c.bound = s.roofline_time > 0 ? (s.compute_bound() ? "compute" : "memory") : kUnknown;
  c.roof = s.roofline_share() >= 0 ? strprintf("%.0f%%", 100 * s.roofline_share()) : kUnknown;
  return c;
}

std::vector<KernelRow> kernel_rows(const TraceModel& m, const Efficiency& e, KernelClass cls, size_t limit) {
  std::vector<KernelRow> rows;
  std::unordered_map<StrId, size_t> row_of;
  std::unordered_map<StrId, const KernelWork*> longest;
  for (const KernelWork& k : e.kernels) {
    // The core leaves communication out of its kernel names: the network's time, not a roofline's.
    if (k.cls == KernelClass::Communication && cls != KernelClass::Communication) continue;
    const StrId name = m.ev.name[k.kernel];
    const KernelWork*& l = longest[name];
    if (!l || k.time > l->time) l = &k;
    if (cls == KernelClass::Count || k.cls != cls) continue;
    auto [it, fresh] = row_of.emplace(name, rows.size());
    if (fresh) rows.push_back({}), rows.back().stat.name = m.name_of(k.kernel);
    rows[it->second].stat.add(k);
  }
  if (cls == KernelClass::Count)
    for (size_t i = 0; i < e.kernel_names.size() && i < limit; ++i) rows.push_back({e.kernel_names[i], kNoEvent});
  std::unordered_map<std::string_view, EventId> by_text;
  for (const auto& [name, k] : longest) by_text[m.strings.view(name)] = k->kernel;
  std::sort(rows.begin(), rows.end(), [](const KernelRow& a, const KernelRow& b) {
    return a.stat.time != b.stat.time ? a.stat.time > b.stat.time : a.stat.name < b.stat.name;
  });
  if (rows.size() > limit) rows.resize(limit);
  for (KernelRow& r : rows)
    if (auto it = by_text.find(r.stat.name); it != by_text.end()) r.longest = it->second;
  return rows;
}

}  // namespace strata::render
