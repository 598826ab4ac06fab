// The details panel's flows: what the selected event came from (a GPU op's launch, a backward
// op's forward op, a GPU range's CPU range) and what it led to (a launch's GPU op, a forward
// op's backward op, a CPU range's GPU range), each a click away (render::flows_of).
#include "app/viewer/viewer.h"

#include "render/elide.h"
#include "render/flows.h"

#include <imgui.h>

#include <algorithm>

namespace strata::viewer {

void reveal(Viewer& v, render::ItemRef r) {
  if (!v.trace || !r.valid()) return;
  const render::Timeline& tl = v.trace->timeline;
  const double t0 = double(tl.start_of(r)), t1 = double(tl.end_of(r));
  const render::TimeView& view = v.timeline.view;
  if (t1 - t0 > view.span() * 0.9) {
    focus_on(v, r);
    return;
  }
  select(v, r, false);
  if (t0 < view.t0 || t1 > view.t1()) {
    // Centred at the same zoom (animate_to adds 3% on each side).
    const double c = (t0 + t1) * 0.5, half = view.span() * 0.5 / 1.06;
    animate_to(v, c - half, c + half);
  }
}

void draw_flows(Viewer& v, EventId e) {
  const TraceModel& m = *v.trace->model;
  const std::vector<render::Flow> flows = render::flows_of(m, e);
  if (flows.empty() || !ImGui::CollapsingHeader("Flows", ImGuiTreeNodeFlags_DefaultOpen)) return;
  EventId go = kNoEvent;
  bool preceding_heading = false, following_heading = false;
  for (size_t i = 0; i < flows.size(); ++i) {
    const render::Flow& f = flows[i];
    bool& shown = f.preceding ? preceding_heading : following_heading;
    if (!shown) {
      ImGui::TextDisabled(f.preceding ? "Came from" : "Led to");
      shown = true;
    }
    const std::string_view name = m.name_of(f.other);
    // "← launch  cudaLaunchKernel": the arrow points the way the work went.
    const std::string label = render::elide_middle(std::string(f.preceding ? "\xE2\x86\x90 " : "\xE2\x86\x92 ") +
                                                       render::flow_kind_name(f.kind) + "  " + std::string(render::short_name(name).substr(0, 200)),
                                                   ImGui::GetContentRegionAvail().x, v.metrics);
    const std::string when = format_duration(m.ev.dur[f.other]) + " at " + fmt_time(v, double(m.ev.start[f.other]));
    // One line when it fits, else the time under the name.
    const ImGuiStyle& st = ImGui::GetStyle();
    const bool one_line = ImGui::CalcTextSize(label.c_str()).x + st.ItemSpacing.x + ImGui::CalcTextSize(when.c_str()).x <=
                          ImGui::GetContentRegionAvail().x;
    const float lines = one_line ? 1.0f : 2.0f;
    ImGui::PushID(int(i));
    const float x0 = ImGui::GetCursorPosX();
    if (ImGui::Selectable("##flow", false, 0, ImVec2(0, ImGui::GetTextLineHeight() * lines + st.ItemSpacing.y * (lines - 1))))
      go = f.other;
    const bool hovered = ImGui::IsItemHovered();
    ImGui::SameLine(x0);
    ImGui::BeginGroup();
    ImGui::TextUnformatted(label.c_str());
    if (one_line) ImGui::SameLine();
    else ImGui::Indent();
    ImGui::TextDisabled("%s", when.c_str());
    if (!one_line) ImGui::Unindent();
    ImGui::EndGroup();
    ImGui::PopID();
    if (hovered) tooltip(v, "%.*s\nclick: select it and bring it into view", int(std::min<size_t>(name.size(), 400)), name.data());
  }
  if (go != kNoEvent) reveal(v, render::ItemRef::event(go));
}

}  // namespace strata::viewer
