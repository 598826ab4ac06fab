// The What-if tab: core's replay (core/whatif) of the open trace's dependency graph under
// scenarios a person picks: each scenario's predicted iteration and speed-up, and for the one
// chosen, an iteration's timeline as measured above the same iteration as predicted, on one
// time scale, each with its critical path drawn bright. The graph is built and replayed on a
// worker thread; the tab shows progress meanwhile.
#include "app/viewer/viewer.h"

#include "core/json_writer.h"
#include "core/whatif/whatif.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>

namespace strata::viewer {

struct WhatIfView {
  std::vector<whatif::Scenario> scenarios;
  // Written by the worker until `done`; read by the UI after.
  std::unique_ptr<whatif::Graph> graph;
  whatif::Report report;
  whatif::ReplayResult replayed;  // the chosen scenario's (-1: the unchanged replay)
  // What the timelines draw, made with the replays rather than every frame: the measured ends,
  // and per vertex whether it is on the measured or the predicted critical path.
  std::vector<Ns> measured_end;
  std::vector<uint8_t> critical_measured, critical_predicted;
  std::string error;
  // The UI's.
  int chosen = 0;
  char custom[160] = {};
  std::thread worker;
  std::atomic<bool> done{false};
  Progress progress;  // its cancel stops the worker (Cancel, or the trace closing)
  ~WhatIfView() {
    progress.cancel = true;
    if (worker.joinable()) worker.join();
  }
  bool cancelled() const { return (graph && graph->cancelled) || report.cancelled || progress.cancelled(); }
};

void WhatIfViewDelete::operator()(WhatIfView* w) const { delete w; }

namespace {

// On the worker: the graph (once), the report over every scenario listed, the chosen one's replay.
void start_replay(Prepared& p, bool report) {
  WhatIfView& w = *p.whatif;
  if (w.worker.joinable()) w.worker.join();
  w.done = false;
  const int chosen = w.chosen;
  w.worker = std::thread([&w, &p, chosen, report] {
    if (!w.graph) {
      w.graph = std::make_unique<whatif::Graph>(whatif::build_graph(*p.model, *p.annotation, &w.progress));
      const whatif::Graph& g = *w.graph;
      w.measured_end.resize(g.size());
      for (size_t i = 0; i < g.size(); ++i) w.measured_end[i] = g.start[i] + g.dur[i];
    }
    if (report) {
      w.report = whatif::what_if(*w.graph, w.scenarios, p.model->path, &w.progress);
      w.critical_measured.assign(w.graph->size(), 0);
      for (whatif::Vertex vx : w.report.baseline.critical_path) w.critical_measured[vx] = 1;
    }
    const std::vector<double> scale =
        chosen >= 0 && size_t(chosen) < w.scenarios.size() ? whatif::scenario_scale(*w.graph, w.scenarios[size_t(chosen)]).scale
                                                           : std::vector<double>{};
    w.replayed = whatif::replay(*w.graph, scale, &w.progress);
    w.critical_predicted.assign(w.graph->size(), 0);
    for (whatif::Vertex vx : w.replayed.critical_path) w.critical_predicted[vx] = 1;
    w.done = true;
  });
}

ImU32 kind_colour(whatif::VertexKind k, bool bright) {
  using K = whatif::VertexKind;
  render::Rgba c = k == K::GpuOp      ? render::base_colour(render::Hue::Kernel)
                   : k == K::Launch   ? render::rgba(86, 140, 200)
                   : k == K::HostWait ? render::rgba(230, 159, 0)
                   : k == K::Call     ? render::rgba(120, 130, 150)
                                      : render::rgba(90, 92, 100);
  return ImU32(bright ? c : render::with_alpha(render::darken(c, 0.45f), 255));
}

// One iteration's lanes: vertices between t0 and t1 (their own clock), shifted to x0.
void draw_iteration(Viewer& v, const whatif::Graph& g, const std::vector<Ns>& start, const std::vector<Ns>& end, Ns t0, Ns t1,
                    const std::vector<uint8_t>& critical, ImVec2 origin, float width, float px_per_ns, const char* title,
                    whatif::Vertex& hovered) {
  const float s = v.scale, row = ImGui::GetTextLineHeight() + 2 * s, label_w = 150 * s;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->AddText(origin, IM_COL32(235, 235, 240, 255), title);
  float y = origin.y + row;
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  for (uint32_t li = 0; li < g.lanes.size(); ++li) {
    const whatif::Lane& lane = g.lanes[li];
    if (lane.part != 0) continue;
    const std::string name = lane.gpu ? strprintf("GPU %d stream %lld", lane.device, (long long)lane.id)
                                      : strprintf("thread %lld", (long long)shown_thread_id(lane.id));
    dl->AddText(ImVec2(origin.x, y), IM_COL32(170, 172, 180, 255), name.c_str());
    dl->AddRectFilled(ImVec2(origin.x + label_w, y), ImVec2(origin.x + label_w + width, y + row - 2 * s), IM_COL32(34, 35, 39, 255));
    float run_x0 = -1, run_x1 = -1;
    ImU32 run_c = 0;
    auto flush = [&] {
      if (run_x1 > run_x0) dl->AddRectFilled(ImVec2(run_x0, y), ImVec2(run_x1, y + row - 2 * s), run_c);
    };
    // A lane's vertices run one after another (program or stream order): the iteration's are
    // a contiguous run, found by binary search.
    auto first = std::partition_point(lane.vertices.begin(), lane.vertices.end(), [&](whatif::Vertex x) { return end[x] <= t0; });
    for (auto it = first; it != lane.vertices.end() && start[*it] < t1; ++it) {
      const whatif::Vertex vx = *it;
      if (end[vx] <= t0) continue;
      const bool idle = g.kind[vx] == whatif::VertexKind::CpuWork && g.event[vx] == kNoEvent && g.node[vx] == kNoNode;
      if (idle && !critical[vx]) continue;
      const float x0 = origin.x + label_w + float(double(std::max(start[vx], t0) - t0) * px_per_ns);
      const float x1 = std::max(x0 + 1.0f, origin.x + label_w + float(double(std::min(end[vx], t1) - t0) * px_per_ns));
      const ImU32 c = kind_colour(g.kind[vx], critical[vx]);
      if (c == run_c && x0 <= run_x1 + 0.5f) {  // runs under a pixel apart: one rect
        run_x1 = std::max(run_x1, x1);
      } else {
        flush();
        run_x0 = x0, run_x1 = x1, run_c = c;
      }
      if (mouse.y >= y && mouse.y < y + row && mouse.x >= x0 && mouse.x < x1) hovered = vx;
    }
    flush();
    y += row;
  }
}

// The tab's state for the open trace, made (and its first replay started) on first use.
WhatIfView& ensure_whatif(Prepared& p) {
  if (!p.whatif) {
    p.whatif.reset(new WhatIfView);
    p.whatif->scenarios = whatif::default_scenarios();
    for (const char* extra : {"amp", "fused-optimizer"}) {
      whatif::Scenario sc;
      std::string error;
      if (whatif::parse_scenario(extra, 2.0, sc, error)) p.whatif->scenarios.push_back(std::move(sc));
    }
    start_replay(p, true);
  }
  return *p.whatif;
}

}  // namespace

void draw_whatif_tab(Viewer& v) {
  if (!v.trace || !v.trace->annotation) return;
  Prepared& p = *v.trace;
  const float s = v.scale;
  WhatIfView& w = ensure_whatif(p);
  if (!w.done) {
    ImGui::TextDisabled("Building the dependency graph and replaying it…");
    ImGui::SameLine();
    if (ImGui::SmallButton("Cancel")) w.progress.cancel = true;
    return;
  }
  if (w.worker.joinable()) w.worker.join();
  if (w.cancelled()) {
    ImGui::TextDisabled("The replay was cancelled.");
    ImGui::SameLine();
    if (ImGui::SmallButton("Run it again")) p.whatif.reset();  // made again next frame
    return;
  }
  const whatif::Graph& g = *w.graph;
  const whatif::Report& r = w.report;
  ImGui::Text("Measured median iteration %s; the graph replayed unchanged gives %s (%+.2f%%).",
              render::format_duration(double(r.measured)).c_str(), render::format_duration(double(r.predicted)).c_str(),
              r.measured ? 100.0 * double(r.predicted - r.measured) / double(r.measured) : 0.0);
  ImGui::SameLine();
  ImGui::TextDisabled("(%zu vertices; %llu inferred waits)", g.size(), (unsigned long long)g.stats.inferred_waits);

  // The scenarios: a radio button each, the prediction and a bar of the saving.
  const float list_w = 430 * s;
  ImGui::BeginChild("whatif_list", ImVec2(list_w, 0), false);
  int pick = w.chosen;
  if (ImGui::RadioButton("unchanged (the measured graph)", pick == -1)) pick = -1;
  for (size_t i = 0; i < r.scenarios.size(); ++i) {
    const whatif::ScenarioResult& sc = r.scenarios[i];
    ImGui::PushID(int(i));
    if (ImGui::RadioButton(sc.scenario.name.c_str(), pick == int(i))) pick = int(i);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", whatif::describe(sc.scenario).c_str());
    ImGui::SameLine(200 * s);
    const double saving = r.predicted > 0 ? 1.0 - double(sc.predicted) / double(r.predicted) : 0;
    ImGui::Text("%10s  %.2fx", render::format_duration(double(sc.predicted)).c_str(), sc.speedup);
    ImGui::SameLine();
    const ImVec2 q = ImGui::GetCursorScreenPos();
    const float bw = 80 * s, h = ImGui::GetTextLineHeight();
    ImGui::Dummy(ImVec2(bw, h));
    ImDrawList* dl = ImGui::GetWindowDrawList();
    dl->AddRectFilled(q, ImVec2(q.x + bw, q.y + h), IM_COL32(45, 47, 53, 255));
    dl->AddRectFilled(q, ImVec2(q.x + bw * float(std::clamp(saving, 0.0, 1.0)), q.y + h), IM_COL32(0, 158, 115, 255));
    ImGui::PopID();
  }
  ImGui::SetNextItemWidth(200 * s);
  const bool entered = ImGui::InputTextWithHint("##custom", "kernel:*gemm*=2", w.custom, sizeof w.custom, ImGuiInputTextFlags_EnterReturnsTrue);
  ImGui::SameLine();
  if ((ImGui::SmallButton("Add scenario") || entered) && w.custom[0]) {
    whatif::Scenario sc;
    if (whatif::parse_scenario(w.custom, 2.0, sc, w.error)) {
      w.scenarios.push_back(std::move(sc));
      w.chosen = int(w.scenarios.size()) - 1;
      w.custom[0] = 0;
      w.error.clear();
      start_replay(p, true);
      ImGui::EndChild();
      return;
    }
  }
  if (!w.error.empty()) ImGui::TextColored(ImVec4(1, 0.5f, 0.4f, 1), "%s", w.error.c_str());
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  for (const std::string& n : r.notes) ImGui::TextWrapped("%s", n.c_str());
  ImGui::PopStyleColor();
  ImGui::EndChild();
  if (pick != w.chosen) {
    w.chosen = pick;
    start_replay(p, false);
    return;
  }

  // The chosen scenario: one iteration, measured above predicted, one scale.
  ImGui::SameLine();
  ImGui::BeginChild("whatif_timeline", ImVec2(0, 0), false);
  const whatif::Part& part = g.parts.front();
  const std::vector<Iteration>& its = p.annotation->iterations;
  // The first complete iteration (its start and end are boundaries 2·it and 2·it + 1).
  size_t it = 0;
  while (it + 1 < part.partial.size() && part.partial[it]) ++it;
  auto boundary_time = [&](const std::vector<Ns>& start, size_t i) {
    const whatif::Boundary& b = part.boundaries[std::min(i, part.boundaries.size() - 1)];
    return b.vertex == whatif::kNoVertex ? Ns(0) : start[b.vertex] + b.offset;
  };
  const Ns m0 = boundary_time(g.start, 2 * it), m1 = boundary_time(g.start, 2 * it + 1);
  const Ns p0 = boundary_time(w.replayed.start, 2 * it), p1 = boundary_time(w.replayed.start, 2 * it + 1);
  const float width = std::max(100 * s, ImGui::GetContentRegionAvail().x - 160 * s);
  const double span = double(std::max<Ns>({m1 - m0, p1 - p0, 1}));
  const float px = float(double(width) / span);
  const std::string name = w.chosen >= 0 && size_t(w.chosen) < r.scenarios.size() ? r.scenarios[size_t(w.chosen)].scenario.name : "unchanged";
  whatif::Vertex hovered = whatif::kNoVertex;
  ImVec2 o = ImGui::GetCursorScreenPos();
  const std::string it_name = it < its.size() ? its[it].name : "the trace";
  draw_iteration(v, g, g.start, w.measured_end, m0, m1, w.critical_measured, o, width, px,
                 strprintf("%s as measured: %s (bright: its critical path)", it_name.c_str(), render::format_duration(double(m1 - m0)).c_str()).c_str(),
                 hovered);
  size_t lanes = 0;
  for (const whatif::Lane& l : g.lanes) lanes += l.part == 0;
  const float block_h = float(lanes + 1) * (ImGui::GetTextLineHeight() + 2 * s) + 6 * s;
  o.y += block_h;
  draw_iteration(v, g, w.replayed.start, w.replayed.end, p0, p1, w.critical_predicted, o, width, px,
                 strprintf("predicted with %s: %s", name.c_str(), render::format_duration(double(p1 - p0)).c_str()).c_str(), hovered);
  ImGui::Dummy(ImVec2(width + 150 * s, 2 * block_h));
  if (hovered != whatif::kNoVertex) {
    const EventId e = g.event[hovered];
    ImGui::SetTooltip("%s%s\nmeasured %s, predicted %s%s", whatif::vertex_kind_name(g.kind[hovered]),
                      e == kNoEvent ? "" : (": " + std::string(p.model->name_of(e).substr(0, 120))).c_str(),
                      render::format_duration(double(g.dur[hovered])).c_str(),
                      render::format_duration(double(w.replayed.end[hovered] - w.replayed.start[hovered])).c_str(),
                      w.critical_predicted[hovered] ? "\non the predicted critical path" : "");
    if (e != kNoEvent && ImGui::IsMouseClicked(ImGuiMouseButton_Left)) focus_on(v, render::ItemRef::event(e));
  }
  ImGui::EndChild();
}

void write_whatif_fields(JsonWriter& j, Viewer& v) {
  if (!v.trace || !v.trace->whatif || !v.trace->whatif->done) return;
  const WhatIfView& w = *v.trace->whatif;
  j.field("measured_ns", int64_t(w.report.measured)).field("predicted_ns", int64_t(w.report.predicted));
  j.field("chosen", w.chosen >= 0 && size_t(w.chosen) < w.scenarios.size() ? w.scenarios[size_t(w.chosen)].name : std::string("unchanged"));
  j.field("critical_path_vertices", uint64_t(w.replayed.critical_path.size()));
  j.key("scenarios").begin_array();
  for (const whatif::ScenarioResult& sc : w.report.scenarios)
    j.begin_object().field("name", sc.scenario.name).field("predicted_ns", int64_t(sc.predicted)).field("speedup", sc.speedup).end_object();
  j.end_array();
}

bool whatif_busy(const Viewer& v) { return v.trace && v.trace->whatif && !v.trace->whatif->done; }

bool choose_whatif(Viewer& v, const std::string& name) {
  if (!v.trace || !v.trace->annotation) return false;
  WhatIfView& w = ensure_whatif(*v.trace);
  if (w.worker.joinable()) w.worker.join();
  for (size_t i = 0; i < w.scenarios.size(); ++i)
    if (w.scenarios[i].name == name) {
      w.chosen = int(i);
      start_replay(*v.trace, false);
      return true;
    }
  whatif::Scenario sc;
  if (!whatif::parse_scenario(name, 2.0, sc, w.error)) return false;
  w.scenarios.push_back(std::move(sc));
  w.chosen = int(w.scenarios.size()) - 1;
  start_replay(*v.trace, true);
  return true;
}

}  // namespace strata::viewer
