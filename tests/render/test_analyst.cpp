// The viewer's GUI-free helpers for reading a trace: the search's results list (per name:
// count, time, longest), text and breadcrumbs shortened in the middle, the flows of an event,
// and the legend's colours.
#include "core/loader.h"
#include "render/elide.h"
#include "render/flows.h"
#include "render/legend.h"
#include "render/search.h"
#include "render/timeline.h"
#include "test_data.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>

using namespace strata;
using namespace strata::render;

namespace {

// Two threads; "step" nests inside "step" on thread 1 (its time must not count twice);
// a launch and its kernel; a forward op and its backward op (fwdbwd flow); a CPU range and
// its GPU range (External id).
const char* kTrace = R"J({"traceEvents":[
{"ph":"M","name":"process_name","pid":1,"tid":0,"args":{"name":"python"}},
{"ph":"M","name":"process_name","pid":0,"tid":0,"args":{"name":"GPU 0"}},
{"ph":"M","name":"process_labels","pid":0,"tid":0,"args":{"labels":"GPU 0"}},
{"ph":"X","cat":"user_annotation","name":"step","pid":1,"tid":1,"ts":0,"dur":1000,"args":{"External id":50}},
{"ph":"X","cat":"user_annotation","name":"step","pid":1,"tid":1,"ts":100,"dur":300},
{"ph":"X","cat":"cpu_op","name":"aten::conv2d","pid":1,"tid":1,"ts":500,"dur":200,"args":{"External id":1}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":510,"dur":10,"args":{"correlation":7,"External id":1}},
{"ph":"X","cat":"kernel","name":"conv_kernel","pid":0,"tid":7,"ts":600,"dur":150,"args":{"correlation":7,"device":0,"stream":7}},
{"ph":"X","cat":"gpu_user_annotation","name":"step","pid":0,"tid":7,"ts":590,"dur":400,"args":{"External id":50}},
{"ph":"X","cat":"user_annotation","name":"Step","pid":1,"tid":2,"ts":2000,"dur":50},
{"ph":"X","cat":"cpu_op","name":"ConvolutionBackward0","pid":1,"tid":2,"ts":2100,"dur":80,"args":{"External id":2}},
{"ph":"s","cat":"fwdbwd","name":"fwdbwd","id":3,"pid":1,"tid":1,"ts":500},
{"ph":"f","cat":"fwdbwd","name":"fwdbwd","id":3,"pid":1,"tid":2,"ts":2100,"bp":"e"}
]})J";

std::unique_ptr<TraceModel> load(std::string_view json) {
  LoadResult r = load_trace_bytes("analyst.json", json);
  REQUIRE_MESSAGE(r.model, r.error());
  return std::move(r.model);
}

// A real trace (the caller skips the case where this checkout lacks it).
std::unique_ptr<TraceModel> load_file(const std::string& path) {
  LoadResult r = load_trace(path);
  REQUIRE_MESSAGE(r.model, r.error());
  return std::move(r.model);
}

EventId find(const TraceModel& m, std::string_view name, std::string_view cat = {}) {
  for (EventId e = 0; e < m.ev.size(); ++e)
    if (m.name_of(e) == name && (cat.empty() || m.category_names[m.ev.cat[e]] == cat)) return e;
  return kNoEvent;
}

const NameMatches* named(const TraceModel& m, const SearchResult& r, std::string_view name) {
  for (const NameMatches& n : r.names)
    if (m.strings.view(n.name) == name) return &n;
  return nullptr;
}

}  // namespace

TEST_CASE("search results: per name its count, the time it covers, its longest; by time") {
  auto m = load(kTrace);
  SearchResult r = find_by_name(*m, "STEP");
  REQUIRE(r.names.size() == 2);
  const NameMatches* step = named(*m, r, "step");
  const NameMatches* Step = named(*m, r, "Step");
  REQUIRE(step);
  REQUIRE(Step);
  CHECK(step->count == 3);
  // Thread 1: the outer 1000 µs holds the inner 300 µs; the GPU range adds its own 400 µs.
  CHECK(step->total == 1'400'000);
  CHECK(m->ev.dur[step->longest] == 1'000'000);
  CHECK(Step->count == 1);
  CHECK(Step->total == 50'000);
  CHECK(r.names.front().name == step->name);  // the most time first
  size_t counted = 0;
  for (const NameMatches& n : r.names) counted += n.count;
  CHECK(counted == r.matches.size());
  // A name's occurrences, in time order.
  std::vector<EventId> occ = occurrences(*m, r, step->name);
  REQUIRE(occ.size() == 3);
  CHECK(std::is_sorted(occ.begin(), occ.end(), [&](EventId a, EventId b) { return m->ev.start[a] < m->ev.start[b]; }));
  for (EventId e : occ) CHECK(m->name_of(e) == "step");
  CHECK(find_by_name(*m, "nothing like it").names.empty());
}

TEST_CASE("search results on a real trace: counts add up, times within the trace, sorted") {
  const std::string path = std::string(STRATA_TEST_DATA_DIR) + "/torch2/resnet18-train-h100.pt.trace.json.gz";
  STRATA_SKIP_UNLESS(std::filesystem::exists(path), path + " not found");
  auto model = load_file(path);
  const TraceModel& m = *model;
  SearchResult r = find_by_name(m, "conv");
  REQUIRE(!r.names.empty());
  size_t counted = 0;
  for (size_t i = 0; i < r.names.size(); ++i) {
    const NameMatches& n = r.names[i];
    counted += n.count;
    CHECK(contains_ignoring_case(m.strings.view(n.name), "conv"));
    CHECK(n.total >= m.ev.dur[n.longest]);
    CHECK(n.total <= Ns(n.count) * m.ev.dur[n.longest]);
    if (i) CHECK(r.names[i - 1].total >= n.total);
  }
  CHECK(counted == r.matches.size());
}

TEST_CASE("elide_middle: both ends kept, never wider than asked, UTF-8 whole") {
  const FontMetrics f = FontMetrics::monospace(7, 13);  // "…" is 7 px too
  CHECK(elide_middle("short", 100, f) == "short");
  const std::string name = "sm80_xmma_fprop_implicit_gemm_kernel";
  std::string e = elide_middle(name, 70, f);
  CHECK(f.width(e) <= 70);
  CHECK(e == "sm80_\xE2\x80\xA6" "rnel");  // 5 at the front, 4 at the back, the ellipsis between
  CHECK(elide_middle(name, 7, f) == "\xE2\x80\xA6");
  CHECK(elide_middle(name, 3, f).empty());
  // Multi-byte characters are kept whole.
  std::string u = elide_middle("\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9", 35, f);
  CHECK(u == "\xC3\xA9\xC3\xA9\xE2\x80\xA6\xC3\xA9\xC3\xA9");
  // No space next to the ellipsis.
  CHECK(elide_middle("aaaa bbbb cccc", 70, f).find(" \xE2\x80\xA6") == std::string::npos);
}

TEST_CASE("wrap_at_spaces: lines break at spaces only, a figure never at its point") {
  const FontMetrics f = FontMetrics::monospace(7, 13);
  // 70 px: 10 characters a line. Dear ImGui's wrapping broke "10.129 ms" after "10.".
  const std::string text = "GPU time 10.129 ms in 750 ops (busy 63.19 ms)";
  const std::vector<std::string_view> lines = wrap_at_spaces(text, 70, f);
  REQUIRE(lines.size() > 1);
  for (std::string_view l : lines) {
    CAPTURE(l);
    CHECK(f.width(l) <= 70);
    CHECK_FALSE(l.empty());
    CHECK(l.front() != ' ');
    CHECK(l.back() != ' ');
  }
  // Every word is whole on one line: the figures among them.
  CHECK(std::find(lines.begin(), lines.end(), std::string_view("10.129 ms")) != lines.end());
  CHECK(std::find(lines.begin(), lines.end(), std::string_view("63.19 ms)")) != lines.end());
  // A word longer than a line is cut where the line ends; the text's own newlines break too.
  const std::vector<std::string_view> cut = wrap_at_spaces("aaaaaaaaaaaaaaa b\nc", 70, f);
  REQUIRE(cut.size() == 3);
  CHECK(cut[0] == "aaaaaaaaaa");
  CHECK(cut[1] == "aaaaa b");
  CHECK(cut[2] == "c");
}

TEST_CASE("fit_path: the ends stay, a run in the middle hides behind one item") {
  const std::vector<float> w{50, 100, 100, 100, 100, 80};  // Trace, Iteration, Phase, layer, layer, kernel
  PathFit all = fit_path(w, 10, 20, 1000);
  CHECK_FALSE(all.hides());
  CHECK(all.width == doctest::Approx(580));
  PathFit some = fit_path(w, 10, 20, 400);
  REQUIRE(some.hides());
  CHECK(some.hidden_begin >= 1);
  CHECK(some.hidden_end <= w.size() - 1);
  CHECK(some.width <= 400);
  // Just enough hidden: showing one more would not fit.
  CHECK(some.hidden_end - some.hidden_begin == 2);
  PathFit tight = fit_path(w, 10, 20, 100);
  CHECK(tight.hidden_begin == 1);
  CHECK(tight.hidden_end == w.size() - 1);
  CHECK(tight.width > 100);  // the caller shortens the last one
  CHECK_FALSE(fit_path({500, 500}, 10, 20, 100).hides());  // nothing in the middle to hide
}

TEST_CASE("flows: launch and GPU op, forward and backward op, CPU and GPU range, both ways") {
  auto m = load(kTrace);
  const EventId launch = find(*m, "cudaLaunchKernel"), kernel = find(*m, "conv_kernel");
  const EventId fwd = find(*m, "aten::conv2d"), bwd = find(*m, "ConvolutionBackward0");
  const EventId cpu_range = find(*m, "step", "user_annotation"), gpu_range = find(*m, "step", "gpu_user_annotation");
  REQUIRE(launch != kNoEvent);
  REQUIRE(kernel != kNoEvent);
  auto has = [&](EventId e, FlowKind k, bool preceding, EventId other) {
    for (const Flow& f : flows_of(*m, e))
      if (f.kind == k && f.preceding == preceding && f.other == other) return true;
    return false;
  };
  CHECK(has(launch, FlowKind::GpuOp, false, kernel));
  CHECK(has(kernel, FlowKind::Launch, true, launch));
  CHECK(has(fwd, FlowKind::BackwardOp, false, bwd));
  CHECK(has(bwd, FlowKind::ForwardOp, true, fwd));
  CHECK(has(cpu_range, FlowKind::GpuRange, false, gpu_range));
  CHECK(has(gpu_range, FlowKind::CpuRange, true, cpu_range));
  // Preceding flows come first.
  std::vector<Flow> k = flows_of(*m, kernel);
  CHECK(std::is_partitioned(k.begin(), k.end(), [](const Flow& f) { return f.preceding; }));
  CHECK(flows_of(*m, find(*m, "Step")).empty());
  CHECK(flows_of(*m, kNoEvent).empty());
  CHECK(std::string(flow_kind_name(FlowKind::GpuOp)) == "GPU op");
}

TEST_CASE("flows on a real trace: every fwd/bwd pair and every launch is one click each way") {
  STRATA_REQUIRE_TRACE(path, "hta-resnet-v100-fwdbwd.pt.trace.json.gz");
  auto model = load_file(path);
  const TraceModel& m = *model;
  REQUIRE(!m.fwd_to_bwd.empty());
  size_t checked = 0;
  for (auto [f, b] : m.fwd_to_bwd) {
    if (++checked > 200) break;
    std::vector<Flow> out = flows_of(m, f);
    CHECK(std::any_of(out.begin(), out.end(), [&](const Flow& x) { return x.kind == FlowKind::BackwardOp && x.other == b; }));
  }
  size_t kernels = 0;
  for (EventId e = 0; e < m.ev.size() && kernels < 200; ++e) {
    const EventId l = m.launch_of(e);
    if (l == kNoEvent) continue;
    ++kernels;
    std::vector<Flow> in = flows_of(m, e);
    CHECK(std::any_of(in.begin(), in.end(), [&](const Flow& x) { return x.kind == FlowKind::Launch && x.preceding && x.other == l; }));
  }
  CHECK(kernels > 0);
}

TEST_CASE("legend: every phase kind and idle cause has an entry; colours as drawn") {
  const std::vector<LegendEntry> legend = phase_legend();
  size_t phases = 0;
  for (const LegendEntry& e : legend) phases += size_t(std::count(e.what.begin(), e.what.end(), ',')) + 1;
  CHECK(phases == size_t(PhaseKind::Count));
  for (const LegendEntry& e : legend)  // one entry per colour
    CHECK(std::count_if(legend.begin(), legend.end(), [&](const LegendEntry& x) { return x.colour == e.colour; }) == 1);
  CHECK(idle_cause_legend().size() == size_t(IdleCause::Count));
  CHECK(idle_cause_legend()[0].colour == idle_cause_colour(IdleCause::Launch));
  CHECK(base_colour(phase_hue(PhaseKind::Backward)) != base_colour(phase_hue(PhaseKind::Forward)));
}
