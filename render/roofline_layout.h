// The Roofline tab's plot: on log-log axes, arithmetic intensity (FLOP per byte) across and
// achieved FLOP/s up, the roofs of the device most kernel time ran on (its memory bandwidth ×
// intensity up to the ridge, then flat at a peak: the FP32 vector peak, and the tensor peak of
// the number format most matrix-kernel time ran in), and a point per kernel class, its area by
// the class's time, labelled where the label covers nothing drawn before it. The app draws it
// and asks `hit` what is under the mouse; the table beside it reads `efficiency_cells` and
// `kernel_rows`. Every figure is core/efficiency's; no GUI calls here.
#pragma once

#include "core/efficiency/efficiency.h"
#include "render/labels.h"
#include "render/palette.h"

#include <string>
#include <vector>

namespace strata::render {

// Pixel sizes (the app scales them).
struct RooflineStyle {
  float width = 640, height = 360;  // of the whole picture
  float axis_left = 84;    // the y axis' tick labels, left of the plot
  float axis_top = 28;     // the y axis' title, above the plot
  float axis_bottom = 40;  // the x axis' tick labels and its title, under the plot
  float pad = 10;          // right of the plot
  float min_radius = 4, max_radius = 16;  // a point's, by the square root of its time share
  FontMetrics font = FontMetrics::monospace(7, 13);  // for placing labels
};

struct RooflineText {
  float x, y;  // its top left
  Rgba colour;
  std::string text;
};

// A roof: the memory slope from (x0, y0) up to the ridge (xr, yr), then flat to x1.
struct RooflineRoof {
  std::string label;  // "FP32 vector 19.5 TFLOP/s", "BF16 tensor 312.0 TFLOP/s"
  double peak = 0;    // FLOP/s
  double ridge = 0;   // FLOP/B where bandwidth × intensity reaches the peak
  float x0 = 0, y0 = 0, xr = 0, yr = 0, x1 = 0;
  Rgba colour = 0;
};

struct RooflinePoint {
  std::string name;       // the kernel class ("gemm")
  KernelClass cls = KernelClass::Other;
  size_t stat = 0;        // into Efficiency::classes
  double intensity = 0;   // FLOP/B
  double flop_per_s = 0;  // achieved
  double peak = 0;        // the highest peak its kernels ran against (0: no roofline)
  double roof = 0;        // what the roofline allows at its intensity: min(peak, bandwidth × intensity); 0 unknown
  EventId longest = kNoEvent;  // its longest kernel (the timeline's item for it)
  float x = 0, y = 0, radius = 0;
  Rgba colour = 0;
  float label_x = 0, label_y = 0;  // its label's top left
};

struct RooflineTick {
  float at;  // px along its axis
  std::string text;
};

struct RooflineLayout {
  std::string empty;    // set: nothing is plotted, and this says why in words
  std::string device;   // the roofs' device, as the table names it (empty: no roofline)
  std::string no_roof;  // set: why no roof is drawn ("device X is not in the roofline table")
  double bandwidth = 0;  // bytes/s of the roofs' memory slope
  double x_min = 0, x_max = 0, y_min = 0, y_max = 0;  // the axes' ranges, whole decades: FLOP/B and FLOP/s
  float plot_x0 = 0, plot_y0 = 0, plot_x1 = 0, plot_y1 = 0;  // the plot's area (y0 its top)
  std::vector<RooflineRoof> roofs;      // the lower first
  std::vector<RooflinePoint> points;    // the larger first (drawn in this order, the smaller on top)
  std::vector<RooflineTick> x_ticks, y_ticks;
  std::vector<RooflineText> texts;      // the axes' titles, the roofs' and the slope's labels, the points' labels
  std::vector<std::string> unplotted;   // classes with kernels but no place on log axes ("copy: no FLOPs")
  float width = 0, height = 0;

  void clear();
  float x_of(double intensity) const;
  float y_of(double flop_per_s) const;
  // The point under (x, y) (the smallest of those there, as it is drawn on top), or -1.
  int hit(float x, float y) const;
};

// A kernel class's colour (the points and the table's chips).
Rgba kernel_class_colour(KernelClass c);

// Lays out the classes of `e` against the roofline of the device with most modelled kernel
// time, into `out` (replaced whole: it is laid out again only when its size changes).
void layout_roofline(const Efficiency& e, const RooflineStyle& style, RooflineLayout& out);

// A group's figures as the tab shows them: "–" where a figure is unknown (no work, no bytes, no
// roofline), never a false 0.
struct EfficiencyCells {
  std::string time, tflops, tbps, intensity, bound, roof;
};
EfficiencyCells efficiency_cells(const EfficiencyStat& s);

// A kernel name's figures and its longest kernel (the timeline's item to go to).
struct KernelRow {
  EfficiencyStat stat;
  EventId longest = kNoEvent;
};
// The kernel names by time, at most `limit`: every class's (the efficiency's own kernel_names)
// when `cls` is KernelClass::Count, else those of that class, grouped as the core groups them.
std::vector<KernelRow> kernel_rows(const TraceModel& m, const Efficiency& e, KernelClass cls, size_t limit);

}  // namespace strata::render
