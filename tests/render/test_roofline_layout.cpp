// The Roofline tab's plot (render/roofline_layout): axes in whole decades around the points and
// the roofs, the roofs' slope, ridge and peak where the device's figures put them, a point per
// class where its intensity and rate put it, sized by time and under its roof, labels that do
// not overlap, hit testing, what is said when nothing can be plotted, and the table's cells; on
// a made-up efficiency and on a real trace.
#include "core/annotate/annotation.h"
#include "core/loader.h"
#include "render/roofline_layout.h"
#include "test_data.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

using namespace strata;
using namespace strata::render;

namespace {

constexpr double kBandwidth = 2e12, kFp32 = 20e12, kTf32 = 160e12, kBf16 = 320e12;

DevicePeaks made_up_peaks() {
  DevicePeaks p;
  p.name = "Made-up GPU";
  p.fp32 = p.fp32_matrix = kFp32, p.tf32 = kTf32, p.fp16 = p.bf16 = kBf16, p.bandwidth = kBandwidth;
  return p;
}

KernelWork kernel(EventId id, KernelClass c, Precision pr, Ns time, double flops, double bytes, double peak) {
  KernelWork k;
  k.kernel = id, k.device = 0, k.cls = c, k.precision = pr, k.source = WorkSource::Shapes;
  k.time = time, k.flops = flops, k.bytes = bytes, k.peak = peak, k.bandwidth = kBandwidth;
  return k;
}

// Kernels grouped as the core groups them: classes by time, the total.
Efficiency made_up(bool with_roofline) {
  Efficiency e;
  e.devices.push_back({0, "Made-up GPU 80GB", with_roofline ? made_up_peaks() : DevicePeaks{}});
  const double bf16 = with_roofline ? kBf16 : 0, fp32 = with_roofline ? kFp32 : 0;
  // BF16 gemms (most of the matrix time) at 100 TFLOP/s and intensity 200; one FP32 gemm.
  e.kernels.push_back(kernel(0, KernelClass::Gemm, Precision::BF16, 2'000'000, 200e9, 1e9, bf16));
  e.kernels.push_back(kernel(1, KernelClass::Gemm, Precision::BF16, 1'000'000, 100e9, 0.5e9, bf16));
  e.kernels.push_back(kernel(2, KernelClass::Gemm, Precision::FP32, 500'000, 5e9, 0.1e9, fp32));
  // Elementwise: memory-bound at intensity 0.25, 1 TB/s.
  e.kernels.push_back(kernel(3, KernelClass::Elementwise, Precision::FP32, 1'000'000, 0.25e9, 1e9, fp32));
  // Norms: intensity 2, 0.5 TB/s.
  e.kernels.push_back(kernel(4, KernelClass::Norm, Precision::FP32, 200'000, 0.2e9, 0.1e9, fp32));
  // Copies move bytes only: no place on log axes.
  e.kernels.push_back(kernel(5, KernelClass::Copy, Precision::Unknown, 300'000, 0, 0.3e9, fp32));
  std::vector<EfficiencyStat> by_class(size_t(KernelClass::Count));
  for (const KernelWork& k : e.kernels) by_class[size_t(k.cls)].add(k), e.total.add(k);
  for (size_t c = 0; c < by_class.size(); ++c)
    if (by_class[c].kernels) by_class[c].name = kernel_class_name(KernelClass(c)), e.classes.push_back(by_class[c]);
  std::sort(e.classes.begin(), e.classes.end(), [](const EfficiencyStat& a, const EfficiencyStat& b) { return a.time > b.time; });
  return e;
}

const RooflinePoint* point(const RooflineLayout& l, std::string_view name) {
  for (const RooflinePoint& p : l.points)
    if (p.name == name) return &p;
  return nullptr;
}

bool whole_decade(double v) { return std::abs(std::log10(v) - std::round(std::log10(v))) < 1e-9; }

bool labels_overlap(const RooflinePoint& a, const RooflinePoint& b, const FontMetrics& f) {
  const float ax1 = a.label_x + f.width(a.name), bx1 = b.label_x + f.width(b.name);
  return std::min(ax1, bx1) > std::max(a.label_x, b.label_x) && std::min(a.label_y, b.label_y) + f.height > std::max(a.label_y, b.label_y);
}

}  // namespace

TEST_CASE("roofline: axes, roofs and points of a made-up efficiency") {
  const Efficiency e = made_up(true);
  RooflineStyle st;
  RooflineLayout l;
  layout_roofline(e, st, l);
  REQUIRE(l.empty.empty());
  CHECK(l.no_roof.empty());
  CHECK(l.device == "Made-up GPU");
  CHECK(l.bandwidth == kBandwidth);

  // The FP32 vector roof and the tensor roof of BF16 (most matrix time), the lower first.
  REQUIRE(l.roofs.size() == 2);
  CHECK(l.roofs[0].label == "FP32 vector 20.0 TFLOP/s");
  CHECK(l.roofs[1].label == "BF16 tensor 320.0 TFLOP/s");
  CHECK(l.roofs[0].ridge == doctest::Approx(10));   // 20 TFLOP/s / 2 TB/s
  CHECK(l.roofs[1].ridge == doctest::Approx(160));
  for (const RooflineRoof& r : l.roofs) {
    CHECK(r.xr == doctest::Approx(l.x_of(r.ridge)));
    CHECK(r.yr == doctest::Approx(l.y_of(r.peak)));
    CHECK(r.x1 == l.plot_x1);
    // The slope: bandwidth × intensity, entering at the plot's left or bottom edge.
    CHECK(r.x0 >= l.plot_x0 - 0.01f);
    CHECK(r.y0 <= l.plot_y1 + 0.01f);
    CHECK((r.x0 == doctest::Approx(l.plot_x0) || r.y0 == doctest::Approx(l.plot_y1)));
  }
  // In log-log, bandwidth × intensity is a line of slope one decade per decade.
  const float x_decade = (l.plot_x1 - l.plot_x0) / float(std::log10(l.x_max / l.x_min));
  const float y_decade = (l.plot_y1 - l.plot_y0) / float(std::log10(l.y_max / l.y_min));
  CHECK((l.roofs[0].y0 - l.roofs[0].yr) / y_decade == doctest::Approx((l.roofs[0].xr - l.roofs[0].x0) / x_decade).epsilon(0.001));

  // Axes: whole decades holding every point and ridge, the peaks below the top.
  for (double v : {l.x_min, l.x_max, l.y_min, l.y_max}) CHECK(whole_decade(v));
  CHECK(l.x_min <= 0.25 / 2);
  CHECK(l.x_max >= 200 * 2);
  CHECK(l.y_max > kBf16);
  CHECK(l.y_max / l.y_min >= 1e3);
  CHECK(l.x_ticks.size() >= 4);
  CHECK(l.y_ticks.size() >= 3);
  CHECK(l.x_ticks.front().at == doctest::Approx(l.plot_x0));
  CHECK(l.y_ticks.front().at == doctest::Approx(l.plot_y1));

  // A point per class with FLOPs and bytes, the larger first; copies said, not placed.
  REQUIRE(l.points.size() == 3);
  CHECK(l.points[0].name == "gemm");
  REQUIRE(l.unplotted.size() == 1);
  CHECK(l.unplotted[0] == "copy: no FLOPs");
  const RooflinePoint* gemm = point(l, "gemm");
  const RooflinePoint* ew = point(l, "elementwise");
  const RooflinePoint* norm = point(l, "norm");
  REQUIRE((gemm && ew && norm));
  CHECK(gemm->intensity == doctest::Approx(305e9 / 1.6e9));
  CHECK(gemm->flop_per_s == doctest::Approx(305e9 / 3.5e-3));
  CHECK(gemm->x == doctest::Approx(l.x_of(gemm->intensity)));
  CHECK(gemm->y == doctest::Approx(l.y_of(gemm->flop_per_s)));
  CHECK(gemm->peak == kBf16);
  CHECK(gemm->longest == 0);
  CHECK(ew->intensity == doctest::Approx(0.25));
  CHECK(ew->flop_per_s == doctest::Approx(0.25e12));
  CHECK(ew->roof == doctest::Approx(kBandwidth * 0.25));  // memory-bound: under the slope
  CHECK(norm->roof == doctest::Approx(kBandwidth * 2));
  // Sized by time: the gemms (3.5 ms) largest, the norms (0.2 ms) smallest, within the style.
  CHECK(gemm->radius == doctest::Approx(st.max_radius));
  CHECK(gemm->radius > ew->radius);
  CHECK(ew->radius > norm->radius);
  CHECK(norm->radius >= st.min_radius);
  for (const RooflinePoint& p : l.points) {
    INFO(p.name);
    CHECK(p.flop_per_s <= p.roof * 1.0001);
    CHECK(p.y >= l.y_of(p.roof) - 0.01f);  // y grows down: under the roof
    CHECK(p.x > l.plot_x0);
    CHECK(p.x < l.plot_x1);
    CHECK(p.y > l.plot_y0);
    CHECK(p.y < l.plot_y1);
    // Labels inside the plot, apart from each other.
    CHECK(p.label_x >= l.plot_x0);
    CHECK(p.label_x + st.font.width(p.name) <= l.plot_x1);
    for (const RooflinePoint& q : l.points)
      if (&q != &p) CHECK_FALSE(labels_overlap(p, q, st.font));
  }

  // Hit testing: each point's centre is that point; a corner of the plot is nothing.
  for (size_t i = 0; i < l.points.size(); ++i) CHECK(l.hit(l.points[i].x, l.points[i].y) == int(i));
  CHECK(l.hit(l.plot_x0 + 1, l.plot_y0 + 1) == -1);
}

TEST_CASE("roofline: a device without a roofline, a trace without work") {
  RooflineLayout l;
  layout_roofline(made_up(false), RooflineStyle{}, l);
  CHECK(l.empty.empty());
  CHECK(l.no_roof == "device Made-up GPU 80GB is not in the roofline table: no roof is drawn");
  CHECK(l.roofs.empty());
  CHECK(l.points.size() == 3);  // still placed by their achieved rates
  for (const RooflinePoint& p : l.points) CHECK(p.roof == 0);

  Efficiency none;
  none.kernels.push_back(kernel(0, KernelClass::Gemm, Precision::Unknown, 1000, 0, 0, 0));
  none.kernels.back().source = WorkSource::None;
  none.total.add(none.kernels.back());
  none.unmodelled.push_back({"aten::mm", WorkModel::NoShapes, 1, 1, 1000});
  layout_roofline(none, RooflineStyle{}, l);
  CHECK(l.empty == "no kernel's work is known: the trace recorded no shapes (record_shapes=True)");
  CHECK(l.points.empty());
  layout_roofline(Efficiency{}, RooflineStyle{}, l);
  CHECK(l.empty == "no GPU kernels in this trace");
}

TEST_CASE("roofline: the table's cells say what is unknown, never a false 0") {
  const Efficiency e = made_up(true);
  const EfficiencyCells gemm = efficiency_cells(e.classes[0]);
  CHECK(gemm.time == "3.500 ms");
  CHECK(gemm.tflops == "87.1");
  CHECK(gemm.bound == "compute");
  EfficiencyStat unknown;
  unknown.name = "no work";
  unknown.kernels = 3, unknown.time = 1000;
  const EfficiencyCells c = efficiency_cells(unknown);
  for (const std::string* s : {&c.tflops, &c.tbps, &c.intensity, &c.bound, &c.roof}) CHECK(*s == "\xE2\x80\x93");
  EfficiencyStat slow;  // 0.04 TFLOP/s reads as such, not "0.0"
  slow.modelled = slow.kernels = 1, slow.time = slow.modelled_time = 1'000'000, slow.flops = 40e6, slow.bytes = 1e6;
  CHECK(efficiency_cells(slow).tflops == "0.04");
  slow.flops = 40e3;  // 0.00004 TFLOP/s
  CHECK(efficiency_cells(slow).tflops == "<0.001");
  slow.flops = 0;  // bytes only: a true 0
  CHECK(efficiency_cells(slow).tflops == "0");
}

TEST_CASE("roofline: a real trace's classes lie under their roofs") {
  const auto path = test::find_trace("tracelens-bert-small-infer-h100.json.gz");
  STRATA_SKIP_UNLESS(!path.empty(), "tracelens-bert-small-infer-h100.json.gz is absent");
  LoadResult r = load_trace(path.string());
  REQUIRE(r.model);
  const Annotation a = annotate(*r.model);
  const Efficiency& e = a.analyses.efficiency;
  RooflineLayout l;
  layout_roofline(e, RooflineStyle{}, l);
  REQUIRE(l.empty.empty());
  CHECK(l.no_roof.empty());
  CHECK(l.device.find("H100") != std::string::npos);
  REQUIRE(l.roofs.size() == 2);
  REQUIRE(!l.points.empty());
  for (const RooflinePoint& p : l.points) {
    INFO(p.name);
    CHECK(p.roof > 0);
    CHECK(p.flop_per_s <= p.roof * 1.0001);
  }
  // The table: every class's kernel names as the core lists them, and one class's alone.
  const std::vector<KernelRow> all = kernel_rows(*r.model, e, KernelClass::Count, 8);
  REQUIRE(all.size() == std::min<size_t>(8, e.kernel_names.size()));
  for (size_t i = 0; i < all.size(); ++i) {
    CHECK(all[i].stat.name == e.kernel_names[i].name);
    REQUIRE(all[i].longest != kNoEvent);
    CHECK(r.model->name_of(all[i].longest) == all[i].stat.name);
  }
  const std::vector<KernelRow> gemms = kernel_rows(*r.model, e, KernelClass::Gemm, 100);
  REQUIRE(!gemms.empty());
  Ns gemm_time = 0;
  for (const KernelRow& k : gemms) gemm_time += k.stat.time;
  const RooflinePoint* gemm = point(l, "gemm");
  REQUIRE(gemm);
  CHECK(gemm_time == e.classes[gemm->stat].time);
}
