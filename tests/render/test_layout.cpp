// The GUI-free layout: view math, ruler, level of detail (visible range, folding), labels,
// hit testing, colours.
#include "core/text_format.h"
#include "render/labels.h"
#include "render/level_layout.h"
#include "render/palette.h"
#include "render/ruler.h"
#include "render/time_view.h"

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

using namespace strata::render;

namespace {

TimeView view(double t0, double t1, float width) {
  TimeView v;
  v.width_px = width;
  v.set_extent(0, 1e12);
  v.fit(t0, t1, 0);
  return v;
}

struct Spans {
  std::vector<Ns> start, dur;
  void add(Ns s, Ns d) { start.push_back(s), dur.push_back(d); }
  SpanColumns cols() const { return {start.data(), dur.data(), 0, uint32_t(start.size())}; }
};

void check_well_formed(const std::vector<LayoutItem>& items, float width) {
  for (size_t i = 0; i < items.size(); ++i) {
    CHECK(items[i].x1 - items[i].x0 >= 0.999f);  // never below a pixel
    CHECK(items[i].count >= 1);
    CHECK(items[i].x0 >= -1.0f);
    CHECK(items[i].x0 <= width + 1.0f);
    if (i) CHECK(items[i].x0 >= items[i - 1].x0);
  }
}

}  // namespace

TEST_CASE("time view: zoom keeps the time under the cursor, pan moves, fit frames") {
  TimeView v = view(1000, 2000, 1000);
  CHECK(v.t0 == doctest::Approx(1000));
  CHECK(v.t1() == doctest::Approx(2000));
  double under = v.t_of(250);
  v.zoom_at(250, 2.0);
  CHECK(v.t_of(250) == doctest::Approx(under));
  CHECK(v.span() == doctest::Approx(500));
  v.pan_px(100);  // content moves right: earlier time at the left edge
  CHECK(v.t0 == doctest::Approx(under - 250 * 0.5 - 100 * 0.5));
  // Panning far past either end stops at a small margin: no time before the trace's start.
  TimeView p = view(1000, 2000, 1000);
  p.set_extent(0, 10'000);
  p.pan_px(1e6);
  CHECK(p.t0 >= -0.05 * p.span() - 1e-6);
  p.pan_px(-1e7);
  CHECK(p.t1() <= 10'000 + 0.05 * p.span() + 1e-6);
  v.zoom_at(0, 1e12);  // clamped at the deepest zoom
  CHECK(v.ns_per_px == doctest::Approx(TimeView::kMinNsPerPx));
  v.zoom_at(0, 1e-30);  // and at the widest
  CHECK(v.span() <= 1e12 * 1.5 + 1);
}

TEST_CASE("ruler: 1-2-5 steps, labels spaced, adaptive units") {
  CHECK(nice_step(0.7) == doctest::Approx(1));
  CHECK(nice_step(1.5) == doctest::Approx(2));
  CHECK(nice_step(3) == doctest::Approx(5));
  CHECK(nice_step(700) == doctest::Approx(1000));
  for (double span : {1e3, 1e5, 3.7e6, 2e9, 9e10}) {
    TimeView v = view(0, span, 1200);
    Ruler r = make_ruler(v, 0, 90);
    CHECK(r.major_step * 1200 / span >= 90 - 1e-6);
    double last = -1e18;
    int majors = 0;
    for (const Tick& t : r.ticks) {
      CHECK(t.t > last);
      last = t.t;
      if (t.major) {
        ++majors;
        CHECK_FALSE(t.label.empty());
      }
    }
    CHECK(majors >= 2);
  }
  CHECK(format_time(4e6, 2e6) == "4 ms");
  CHECK(format_time(3e9, 1e9) == "3 s");
  CHECK(format_time(1500, 500) == "1.5 \xC2\xB5s");  // the unit follows the value, decimals the step
  CHECK(format_time(1.5e6, 2e3) == "1.500 ms");
  // One unit across a ruler's labels, whatever each label's own size.
  for (double t0 : {0.0, 23e6, 45e9}) {
    TimeView z = view(t0, t0 + 150'000, 1000);
    Ruler rz = make_ruler(z, 0, 90);
    std::string unit;
    for (const Tick& t : rz.ticks)
      if (t.major) {
        std::string u = t.label.substr(t.label.rfind(' ') + 1);
        if (unit.empty()) unit = u;
        CHECK(u == unit);
      }
  }
  // Deep in a long trace labels become offsets from a base.
  TimeView deep = view(45e9, 45e9 + 5000, 1000);
  Ruler r = make_ruler(deep, 0, 90);
  CHECK_FALSE(r.base_label.empty());
  for (const Tick& t : r.ticks)
    if (t.major) CHECK(t.label.size() < 12);
}

TEST_CASE("durations: one formatter for the CLI and the viewer, four significant digits, µs") {
  using strata::format_duration;
  using strata::Ns;
  CHECK(format_duration(Ns(0)) == "0 ns");
  CHECK(format_duration(Ns(17)) == "17 ns");
  CHECK(format_duration(Ns(830)) == "830 ns");
  CHECK(format_duration(Ns(830'100)) == "830.1 \xC2\xB5s");
  CHECK(format_duration(Ns(1'500)) == "1.500 \xC2\xB5s");
  CHECK(format_duration(Ns(1'250'000)) == "1.250 ms");
  CHECK(format_duration(Ns(12'345'678)) == "12.35 ms");
  CHECK(format_duration(Ns(76'846'000)) == "76.85 ms");
  CHECK(format_duration(Ns(2'004'000'000)) == "2.004 s");
  CHECK(format_duration(Ns(3'600'000'000'000)) == "3600 s");
  CHECK(format_duration(Ns(-1'500)) == "-1.500 \xC2\xB5s");
  // Rounding that carries keeps four digits, into the next unit if need be.
  CHECK(format_duration(Ns(999'960)) == "1.000 ms");
  CHECK(format_duration(Ns(9'999'600)) == "10.00 ms");
  CHECK(format_duration(Ns(999)) == "999 ns");
  // Fractions of a nanosecond (a view's span at the deepest zoom), and the same text for a
  // double as for the integer it holds.
  CHECK(format_duration(0.25) == "0.25 ns");
  CHECK(format_duration(1.25e6) == format_duration(Ns(1'250'000)));
  // Right-aligned in columns, "µs" counting one.
  CHECK(strata::right_column("1.500 \xC2\xB5s", 10) == "  1.500 \xC2\xB5s");
  CHECK(strata::right_column("12.35 ms", 4) == "12.35 ms");
  // The CLI's text tables (printf widths) count columns too.
  using strata::strprintf;
  CHECK(strprintf("[%10s]", "830.1 \xC2\xB5s") == "[  830.1 \xC2\xB5s]");
  CHECK(strprintf("[%10s]", "12.35 ms") == "[  12.35 ms]");
  CHECK(strprintf("[%-4s|%3d|%s]", "\xC2\xB5s", 42, "x") == "[\xC2\xB5s  | 42|x]");
  CHECK(strprintf("%lld %zu %.2f %c [%6s] %5.1f%% [%-3s]", 1LL, size_t(2), 3.0, 'c', "\xE2\x80\xA6" "ab", 4.25, "\xC2\xB5") ==
        "1 2 3.00 c [   \xE2\x80\xA6" "ab]   4.2% [\xC2\xB5  ]");
  CHECK(strprintf("[%.*s|%4s]", 3, "abcdef", "\xC2\xB5") == "[abc|   \xC2\xB5]");
  CHECK(strprintf("[%*s]", 4, "ab") == "[  ab]");  // '*' widths stay as printf has them
  CHECK(strprintf("100%% [%3s]", "\xC2\xB5") == "100% [  \xC2\xB5]");
}

TEST_CASE("level layout: visible range by binary search") {
  Spans s;
  for (int i = 0; i < 100; ++i) s.add(i * 100, 50);  // [0,50) [100,150) ...
  SpanColumns c = s.cols();
  CHECK(first_visible(c, 0) == 0);
  CHECK(first_visible(c, 49) == 0);
  CHECK(first_visible(c, 50) == 1);   // span 0 ends at 50: not visible from 50 on
  CHECK(first_visible(c, 120) == 1);
  CHECK(first_visible(c, 1e9) == 100);
  TimeView v = view(1000, 2000, 1000);  // 1 ns per px: every span is 50 px wide
  std::vector<LayoutItem> items;
  layout_level(c, v, items);
  REQUIRE(items.size() == 10);
  CHECK(items[0].first == 10);
  CHECK(items[0].count == 1);
  CHECK(items[0].x0 == doctest::Approx(0));
  CHECK(items[0].x1 == doctest::Approx(50));
  check_well_formed(items, 1000);
  // A span straddling the left edge is visible and clipped.
  items.clear();
  layout_level(c, view(1025, 2025, 1000), items);
  CHECK(items[0].first == 10);
  CHECK(items[0].x0 == doctest::Approx(-1));
}

TEST_CASE("level layout: sub-pixel runs fold into counted items") {
  Spans s;
  // 1000 spans of 10 ns every 20 ns (a dense run), a gap, then one long span.
  for (int i = 0; i < 1000; ++i) s.add(i * 20, 10);
  s.add(100000, 50000);
  TimeView v = view(0, 200000, 1000);  // 200 ns per px: the run is sub-pixel
  std::vector<LayoutItem> items;
  layout_level(s.cols(), v, items);
  check_well_formed(items, 1000);
  REQUIRE(items.size() == 2);
  CHECK(items[0].count == 1000);
  CHECK(items[0].first == 0);
  CHECK(items[1].count == 1);
  CHECK(items[1].first == 1000);
  // Zoomed in, the run unfolds.
  items.clear();
  layout_level(s.cols(), view(0, 2000, 1000), items);
  CHECK(items.size() == 100);
  for (const LayoutItem& it : items) CHECK(it.count == 1);
}

TEST_CASE("level layout: a wide span inside a run of tiny ones stays its own item") {
  Spans s;
  for (int i = 0; i < 10; ++i) s.add(i * 10, 5);
  s.add(100, 5000);  // starts right after the run: must not be swallowed
  for (int i = 0; i < 10; ++i) s.add(5100 + i * 10, 5);
  TimeView v = view(0, 10000, 1000);  // 10 ns per px, fold below 30 ns
  std::vector<LayoutItem> items;
  layout_level(s.cols(), v, items);
  check_well_formed(items, 1000);
  uint32_t total = 0;
  bool wide_alone = false;
  for (const LayoutItem& it : items) {
    total += it.count;
    if (it.first == 10) wide_alone = it.count == 1;
  }
  CHECK(total == 21);
  CHECK(wide_alone);
}

TEST_CASE("level layout: work scales with pixels, not spans") {
  Spans s;
  const int n = 2'000'000;
  s.start.reserve(n);
  s.dur.reserve(n);
  for (int i = 0; i < n; ++i) s.add(Ns(i) * 10, 3);
  TimeView v = view(0, double(n) * 10, 1920);
  std::vector<LayoutItem> items;
  layout_level(s.cols(), v, items);
  check_well_formed(items, 1920);
  CHECK(items.size() <= 1920 / 3 + 2);
  uint64_t total = 0;
  for (const LayoutItem& it : items) total += it.count;
  CHECK(total == uint64_t(n));  // every span is accounted for in exactly one item
}

TEST_CASE("labels: fit with an ellipsis, never split UTF-8") {
  FontMetrics f = FontMetrics::monospace(7, 13);
  FittedLabel a = fit_label("conv1", 100, f);
  CHECK(a.bytes == 5);
  CHECK_FALSE(a.ellipsis);
  CHECK(a.width == doctest::Approx(35));
  FittedLabel b = fit_label("aten::convolution_backward", 50, f);
  CHECK(b.ellipsis);
  CHECK(b.width <= 50);
  CHECK(b.bytes == 6);  // 6 chars + ellipsis = 49 px
  CHECK(fit_label("abc", 5, f).bytes == 0);  // not even one char and the ellipsis
  CHECK(fit_label("", 100, f).bytes == 0);
  // "µs" is two bytes for one character: never cut between them.
  FittedLabel u = fit_label("\xC2\xB5\xC2\xB5\xC2\xB5\xC2\xB5", 22, f);
  CHECK(u.ellipsis);
  CHECK(u.bytes % 2 == 0);
  // No space before the ellipsis.
  FittedLabel sp = fit_label("ab cdefgh", 30, f);
  CHECK(sp.bytes == 2);
}

TEST_CASE("labels: short names for kernels and ops") {
  CHECK(short_name("void at::native::vectorized_elementwise_kernel<4, at::native::AbsFunctor<float>>(int, float*)") ==
        "vectorized_elementwise_kernel");
  CHECK(short_name("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(Params)") ==
        "Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>");  // "Kernel" alone says nothing
  CHECK(short_name("at::native::(anonymous namespace)::foo_kernel(int)") == "foo_kernel");
  CHECK(short_name("aten::conv2d") == "conv2d");
  CHECK(short_name("cudaLaunchKernel") == "cudaLaunchKernel");
  CHECK(short_name("Memcpy HtoD (Pageable -> Device)") == "Memcpy HtoD");
}

TEST_CASE("hit testing") {
  std::vector<LayoutItem> items = {{0, 10, 0, 1}, {20, 21, 1, 1}, {30, 60, 2, 5}};
  CHECK(hit_test(items, 5) == 0);
  CHECK(hit_test(items, 20.5f) == 1);
  CHECK(hit_test(items, 22) == 1);   // within the slop of a thin item
  CHECK(hit_test(items, 45) == 2);
  CHECK(hit_test(items, 15) == -1);  // a gap farther than the slop from both
  CHECK(hit_test(items, 100) == -1);
  CHECK(hit_test(nullptr, 0, 5) == -1);
}

TEST_CASE("palette: stable, readable text, layer pairs share a hue") {
  uint64_t h = name_hash("aten::conv2d");
  CHECK(name_colour(Hue::CpuOp, h) == name_colour(Hue::CpuOp, name_hash("aten::conv2d")));
  CHECK(text_on(rgba(250, 250, 250)) == rgba(20, 20, 20));
  CHECK(text_on(rgba(10, 10, 40)) == rgba(245, 245, 245));
  Rgba f = layer_colour(h, false), b = layer_colour(h, true);
  CHECK(f != b);
  CHECK(b == darken(f, 0.3f));
  CHECK(((f >> 24) & 255) == 255);
}

TEST_CASE("short names: generic components keep their template arguments; lists stay distinct") {
  CHECK(short_name("void at::native::(anonymous namespace)::foo<float, 4>(int, float*)") == "foo");
  CHECK(short_name("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8>(Params)") ==
        "Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8>");
  CHECK(short_name("aten::add") == "add");
  std::vector<std::string_view> names = {"void at::native::nchwToNhwcKernel<float>(int, float const*, float*)",
                                         "void at::native::nchwToNhwcKernel<c10::Half>(int, c10::Half const*, c10::Half*)",
                                         "void at::native::other<float>(int)"};
  std::vector<std::string_view> s = distinct_short_names(names);
  REQUIRE(s.size() == 3);
  CHECK(s[0] == "nchwToNhwcKernel<float>");
  CHECK(s[1] == "nchwToNhwcKernel<c10::Half>");
  CHECK(s[2] == "other");
  // Names that differ only in their parameters are shown whole.
  std::vector<std::string_view> same = {"void k<int>(int)", "void k<int>(float)"};
  std::vector<std::string_view> t = distinct_short_names(same);
  CHECK(t[0] == same[0]);
  CHECK(t[1] == same[1]);
}

TEST_CASE("levels sizing: by GPU time a block is as wide as its share of the row's GPU time") {
  // Wall time and GPU time disagree: the host spends longest on the block with the least GPU work.
  const std::vector<LevelBlockTime> blocks = {{600, 100}, {300, 300}, {100, 600}, {50, 0}};
  const float x = 150, width = 1000;
  const std::vector<float> gpu = level_block_edges(blocks, LevelSizing::Gpu, x, width);
  REQUIRE(gpu.size() == blocks.size() + 1);
  CHECK(gpu.front() == doctest::Approx(x));
  CHECK(gpu.back() == doctest::Approx(x + width));
  for (size_t i = 0; i < blocks.size(); ++i)
    CHECK(gpu[i + 1] - gpu[i] == doctest::Approx(double(blocks[i].gpu) / 1000.0 * width));
  CHECK(gpu[4] - gpu[3] == doctest::Approx(0));  // no GPU work: no width (the view draws it a pixel wide)
  // By wall time the same blocks follow their spans, the widest first.
  const std::vector<float> wall = level_block_edges(blocks, LevelSizing::Wall, x, width);
  for (size_t i = 0; i < blocks.size(); ++i)
    CHECK(wall[i + 1] - wall[i] == doctest::Approx(double(blocks[i].wall) / 1050.0 * width));
  CHECK(gpu[1] - gpu[0] < wall[1] - wall[0]);
  // A row without GPU work is sized by wall time rather than drawn empty.
  const std::vector<LevelBlockTime> cpu_only = {{200, 0}, {800, 0}};
  const std::vector<float> e = level_block_edges(cpu_only, LevelSizing::Gpu, 0, 100);
  CHECK(e[1] - e[0] == doctest::Approx(20));
  CHECK(e[2] - e[1] == doctest::Approx(80));
  CHECK(std::string(level_sizing_key(LevelSizing::Gpu)) == "gpu");
}
