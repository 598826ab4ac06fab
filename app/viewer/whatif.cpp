// The What-if tab: core's replay (core/whatif) of the open trace's dependency graph under
// scenarios a person picks: each scenario's predicted iteration and speed-up, and for the one
// chosen, an iteration's timeline as measured above the same iteration as predicted, on one
// time scale, each with its critical path drawn bright (laid out by render/whatif_layout; this
// file asks and shows). The graph is built and replayed on a worker thread; the tab shows
// progress meanwhile.
#include "app/viewer/viewer.h"

#include "core/json_writer.h"
#include "core/whatif/whatif.h"
#include "render/whatif_layout.h"

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
  render::WhatIfLayout layout;  // the last frame's picture (its buffers kept)
  std::string error;
  // The UI's.
  int chosen = 0;
  char custom[160] = {};
  bool refocus = false;  // a scenario refused on Enter: the box keeps the keyboard, to be put right
  // As last drawn, for the layout dump: the box a scenario is typed in, and whether the error
  // under it was wholly in view.
  Box custom_box;
  bool error_in_view = false;
  std::thread worker;
  std::atomic<bool> done{false};
  Progress progress;  // its cancel stops the worker (Cancel, or the trace closing)
  ~WhatIfView() {
    progress.cancel = true;
    if (worker.joinable()) worker.join();
  }
  bool cancelled() const { return (graph && graph->status.is_cancelled()) || report.status.is_cancelled() || progress.cancelled(); }
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

// The tab's state for the open trace, made (and its first replay started) on first use.
WhatIfView& ensure_whatif(Prepared& p) {
  if (!p.whatif) {
    p.whatif.reset(new WhatIfView);
    p.whatif->scenarios = whatif::default_scenarios();
    for (const char* extra : {"amp", "fused-optimizer"}) p.whatif->scenarios.push_back(whatif::parse_scenario(extra, 2.0).value());
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
              format_duration(r.measured).c_str(), format_duration(r.predicted).c_str(),
              r.measured ? 100.0 * double(r.predicted - r.measured) / double(r.measured) : 0.0);
  ImGui::SameLine();
  ImGui::TextDisabled("(%zu vertices; %llu inferred waits)", g.size(), (unsigned long long)g.stats.inferred_waits);

  // The scenarios: a radio button each, the prediction and a bar of the saving.
  const float list_w = 430 * s;
  ImGui::BeginChild("whatif_list", ImVec2(list_w, 0), false);
  // A scenario typed in, at the top where it and what is wrong with it stay in view (under the
  // list, a short panel hid both, so Enter on a bad one seemed to do nothing).
  if (w.refocus) ImGui::SetKeyboardFocusHere(), w.refocus = false;
  ImGui::SetNextItemWidth(200 * s);
  const bool entered = ImGui::InputTextWithHint("##custom", "kernel:*gemm*=2", w.custom, sizeof w.custom, ImGuiInputTextFlags_EnterReturnsTrue);
  const ImVec2 box_lo = ImGui::GetItemRectMin(), box_hi = ImGui::GetItemRectMax();
  w.custom_box = {box_lo.x, box_lo.y, box_hi.x - box_lo.x, box_hi.y - box_lo.y};
  ImGui::SameLine();
  const bool add = ImGui::SmallButton("Add scenario") || entered;
  if (add && !w.custom[0]) {
    w.error = "Type a scenario first: kernel:GLOB=F, layer:PATH=F or phase:NAME=F (F: the speed-up), or a named one such as kernels-2x";
  } else if (add) {
    Result<whatif::Scenario> sc = whatif::parse_scenario(w.custom, 2.0);
    if (sc.is_ok()) {
      w.scenarios.push_back(std::move(sc.value()));
      w.chosen = int(w.scenarios.size()) - 1;
      w.custom[0] = 0;
      w.error.clear();
      start_replay(p, true);
      ImGui::EndChild();
      return;
    }
    w.error = sc.status().message();
  }
  w.refocus = add && !w.error.empty();
  w.error_in_view = false;
  if (!w.error.empty()) {
    const float top = ImGui::GetCursorScreenPos().y;
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1, 0.5f, 0.4f, 1));
    text_wrapped(v, w.error);
    ImGui::PopStyleColor();
    const float win_top = ImGui::GetWindowPos().y, win_bottom = win_top + ImGui::GetWindowHeight();
    w.error_in_view = top >= win_top && ImGui::GetCursorScreenPos().y <= win_bottom + ImGui::GetStyle().ItemSpacing.y;
  }
  ImGui::Separator();
  int pick = w.chosen;
  if (ImGui::RadioButton("unchanged (the measured graph)", pick == -1)) pick = -1;
  for (size_t i = 0; i < r.scenarios.size(); ++i) {
    const whatif::ScenarioResult& sc = r.scenarios[i];
    ImGui::PushID(int(i));
    if (ImGui::RadioButton(sc.scenario.name.c_str(), pick == int(i))) pick = int(i);
    if (ImGui::IsItemHovered()) tooltip(v, "%s", whatif::describe(sc.scenario).c_str());
    ImGui::SameLine(200 * s);
    const double saving = r.predicted > 0 ? 1.0 - double(sc.predicted) / double(r.predicted) : 0;
    ImGui::Text("%s  %.2fx", right_column(format_duration(sc.predicted), 10).c_str(), sc.speedup);
    ImGui::SameLine();
    const ImVec2 q = ImGui::GetCursorScreenPos();
    const float bw = 80 * s, h = ImGui::GetTextLineHeight();
    ImGui::Dummy(ImVec2(bw, h));
    ImDrawList* dl = ImGui::GetWindowDrawList();
    dl->AddRectFilled(q, ImVec2(q.x + bw, q.y + h), IM_COL32(45, 47, 53, 255));
    dl->AddRectFilled(q, ImVec2(q.x + bw * float(std::clamp(saving, 0.0, 1.0)), q.y + h), IM_COL32(0, 158, 115, 255));
    ImGui::PopID();
  }
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  for (const std::string& n : r.notes) text_wrapped(v, n);
  ImGui::PopStyleColor();
  ImGui::EndChild();
  if (pick != w.chosen) {
    w.chosen = pick;
    start_replay(p, false);
    return;
  }

  // The chosen scenario: one iteration, measured above predicted, one scale (render/whatif_layout).
  ImGui::SameLine();
  ImGui::BeginChild("whatif_timeline", ImVec2(0, 0), false);
  render::WhatIfInput in;
  in.graph = &g;
  in.measured = {&g.start, &w.measured_end, &w.critical_measured};
  in.predicted = {&w.replayed.start, &w.replayed.end, &w.critical_predicted};
  in.iterations = &p.annotation->iterations;
  in.scenario = w.chosen >= 0 && size_t(w.chosen) < r.scenarios.size() ? r.scenarios[size_t(w.chosen)].scenario.name : "unchanged";
  render::WhatIfStyle style;
  style.row_h = ImGui::GetTextLineHeight() + 2 * s;
  style.bar_gap = 2 * s;
  style.label_w = 150 * s;
  style.block_gap = 6 * s;
  style.width = std::max(100 * s, ImGui::GetContentRegionAvail().x - 160 * s);
  render::WhatIfLayout& lay = w.layout;
  render::layout_whatif(in, style, lay);
  const ImVec2 o = ImGui::GetCursorScreenPos();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  for (const render::WhatIfText& t : lay.texts) dl->AddText(ImVec2(o.x + t.x, o.y + t.y), ImU32(t.colour), t.text.c_str());
  for (const render::DrawRect& rc : lay.rects) dl->AddRectFilled(ImVec2(o.x + rc.x0, o.y + rc.y0), ImVec2(o.x + rc.x1, o.y + rc.y1), ImU32(rc.fill));
  ImGui::Dummy(ImVec2(lay.width, lay.height));
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const whatif::Vertex hovered = lay.hit(mouse.x - o.x, mouse.y - o.y);
  if (hovered != whatif::kNoVertex) {
    const EventId e = g.event[hovered];
    tooltip(v, "%s%s\nmeasured %s, predicted %s%s", whatif::vertex_kind_name(g.kind[hovered]),
                      e == kNoEvent ? "" : (": " + std::string(p.model->name_of(e).substr(0, 120))).c_str(),
                      format_duration(g.dur[hovered]).c_str(),
                      format_duration(w.replayed.end[hovered] - w.replayed.start[hovered]).c_str(),
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
  j.field("error", std::string_view(w.error)).field("error_in_view", w.error_in_view);
  j.key("custom_box").begin_object().field("x", double(w.custom_box.x)).field("y", double(w.custom_box.y));
  j.field("w", double(w.custom_box.w)).field("h", double(w.custom_box.h)).end_object();
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
  Result<whatif::Scenario> sc = whatif::parse_scenario(name, 2.0);
  if (!sc.is_ok()) {
    w.error = sc.status().message();
    return false;
  }
  w.scenarios.push_back(std::move(sc.value()));
  w.chosen = int(w.scenarios.size()) - 1;
  start_replay(*v.trace, true);
  return true;
}

}  // namespace strata::viewer
