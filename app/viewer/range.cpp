// Measuring on the timeline: Shift+drag over the rows (or a drag along the ruler) measures a
// stretch of time, whose figures (core's range_figures, as `strata summary --range` prints them)
// the details panel shows; a click on the ruler drops a flag, a click on a flag takes it
// away, and the time between neighbouring flags is written between them.
#include "app/viewer/viewer.h"

#include "core/json_writer.h"

#include <imgui.h>
#include <imgui_internal.h>

#include <algorithm>
#include <cmath>

namespace strata::viewer {

void set_range(Viewer& v, Ns a, Ns b) {
  RangeState& r = v.timeline.range;
  r.t0 = double(std::min(a, b));
  r.t1 = double(std::max(a, b));
  r.active = b != a;
  if (r.active && v.trace && v.trace->annotation) r.figures = range_figures(*v.trace->model, *v.trace->annotation, a, b);
}

void clear_range(Viewer& v) {  // the flags stay
  RangeState& r = v.timeline.range;
  r.active = false;
  r.t0 = r.t1 = 0;
  r.figures = {};
}

bool handle_range_input(Viewer& v, float area_x, bool in_area, bool in_ruler, bool hovered_window) {
  RangeState& r = v.timeline.range;
  const ImGuiIO& io = ImGui::GetIO();
  const double t = v.timeline.view.t_of(io.MousePos.x - area_x);
  if (hovered_window && ImGui::IsMouseClicked(ImGuiMouseButton_Left) && ((in_area && io.KeyShift) || in_ruler)) {
    r.dragging = true;
    r.from_ruler = in_ruler;
    r.anchor = t;
    r.drag_px = 0;
    return true;
  }
  if (!r.dragging) return false;
  r.drag_px += std::abs(io.MouseDelta.x);
  if (ImGui::IsMouseDown(ImGuiMouseButton_Left)) {
    if (r.drag_px > 3) {
      r.t0 = std::min(r.anchor, t);
      r.t1 = std::max(r.anchor, t);
      r.active = false;  // figures when the drag ends
    }
    return true;
  }
  r.dragging = false;
  if (r.drag_px > 3) {
    set_range(v, Ns(r.anchor), Ns(t));
    return true;
  }
  if (r.from_ruler) {  // a click on the ruler: a flag, or one taken away
    const float slack = 4 * v.scale;
    auto near = std::find_if(r.flags.begin(), r.flags.end(),
                             [&](double f) { return std::abs(v.timeline.view.x_of(f) - (io.MousePos.x - area_x)) <= slack; });
    if (near != r.flags.end()) r.flags.erase(near);
    else r.flags.insert(std::upper_bound(r.flags.begin(), r.flags.end(), r.anchor), r.anchor);
  }
  return true;
}

void draw_range_overlay(Viewer& v, float area_x, float area_w, float ruler_y, float rows_y, float bottom) {
  RangeState& r = v.timeline.range;
  const render::TimeView& view = v.timeline.view;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float s = v.scale, line_h = ImGui::GetTextLineHeight() + 4 * s;
  r.ruler = {area_x, ruler_y, area_w, rows_y - ruler_y};
  r.flag_labels.clear();
  // A label on a dark chip just under the ruler (on the ruler it covered the ticks' times);
  // `line` 1 is the line below the first.
  auto label = [&](const std::string& text, float centre, int line, ImU32 chip, ImU32 colour) {
    const ImVec2 ts = ImGui::CalcTextSize(text.c_str());
    const float lx = std::clamp(centre - ts.x * 0.5f, area_x + 2 * s, area_x + area_w - ts.x - 2 * s);
    const float ly = rows_y + 2 * s + float(line) * line_h;
    dl->AddRectFilled(ImVec2(lx - 3 * s, ly), ImVec2(lx + ts.x + 3 * s, ly + ts.y + 2 * s), chip);
    dl->AddText(ImVec2(lx, ly + s), colour, text.c_str());
    return Box{lx - 3 * s, ly, ts.x + 6 * s, ts.y + 2 * s};
  };
  dl->PushClipRect(ImVec2(area_x, ruler_y), ImVec2(area_x + area_w, bottom), true);
  for (size_t i = 0; i < r.flags.size(); ++i) {
    const float x = area_x + view.x_of(r.flags[i]);
    dl->AddLine(ImVec2(x, ruler_y), ImVec2(x, bottom), IM_COL32(255, 200, 60, 200), 1.0f * s);
    dl->AddTriangleFilled(ImVec2(x, ruler_y), ImVec2(x + 8 * s, ruler_y + 4 * s), ImVec2(x, ruler_y + 8 * s), IM_COL32(255, 200, 60, 255));
    if (i == 0) continue;
    const float px = area_x + view.x_of(r.flags[i - 1]);
    const std::string d = "\xCE\x94 " + format_duration(r.flags[i] - r.flags[i - 1]);  // Δ
    if (x - px > ImGui::CalcTextSize(d.c_str()).x + 8 * s)
      r.flag_labels.emplace_back(d, label(d, (px + x) * 0.5f, 0, IM_COL32(60, 45, 15, 235), IM_COL32(255, 215, 120, 255)));
  }
  if (r.active || (r.dragging && r.t1 > r.t0)) {
    const float a = area_x + view.x_of(r.t0), b = area_x + view.x_of(r.t1);
    dl->AddRectFilled(ImVec2(a, rows_y), ImVec2(b, bottom), IM_COL32(120, 170, 255, 40));
    dl->AddLine(ImVec2(a, ruler_y), ImVec2(a, bottom), IM_COL32(120, 170, 255, 200), 1.5f * s);
    dl->AddLine(ImVec2(b, ruler_y), ImVec2(b, bottom), IM_COL32(120, 170, 255, 200), 1.5f * s);
    label(format_duration(r.t1 - r.t0), (a + b) * 0.5f, r.flag_labels.empty() ? 0 : 1, IM_COL32(30, 50, 90, 235), IM_COL32(235, 240, 255, 255));
  }
  dl->PopClipRect();
}

void draw_range_details(Viewer& v) {
  const RangeState& r = v.timeline.range;
  const RangeFigures& f = r.figures;
  ImGui::PushFont(v.font_bold);
  ImGui::Text("Range of %s", format_duration(r.t1 - r.t0).c_str());
  ImGui::PopFont();
  ImGui::TextDisabled("%s to %s", fmt_time(v, r.t0).c_str(), fmt_time(v, r.t1).c_str());
  if (ImGui::SmallButton("Zoom to it")) animate_to(v, r.t0, r.t1);
  ImGui::SameLine();
  if (ImGui::SmallButton("Clear")) {
    clear_range(v);
    return;
  }
  for (const DeviceUtil& u : f.utilization)
    ImGui::Text("GPU %d busy %s (%.1f%%)", u.device, format_duration(u.busy).c_str(),
                u.elapsed ? 100.0 * double(u.busy) / double(u.elapsed) : 0.0);
  auto list = [&](const char* title, const std::vector<NameStat>& items) {
    if (items.empty() || !ImGui::CollapsingHeader(title, ImGuiTreeNodeFlags_DefaultOpen)) return;
    std::vector<std::string_view> full;
    for (const NameStat& n : items) full.push_back(n.name);
    const std::vector<std::string_view> shown = render::distinct_short_names(full);
    if (!ImGui::BeginTable(title, 3, ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit)) return;
    ImGui::TableSetupColumn("name", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableSetupColumn("time");
    ImGui::TableSetupColumn("count");
    for (size_t i = 0; i < items.size() && i < 20; ++i) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      std::string label = std::string(shown[i].substr(0, 80)) + "##" + title + std::to_string(i);
      if (ImGui::Selectable(label.c_str(), false, ImGuiSelectableFlags_SpanAllColumns) && items[i].longest != kNoEvent)
        focus_on(v, render::ItemRef::event(items[i].longest));
      if (ImGui::IsItemHovered()) tooltip(v, "%s\nclick: the longest one", items[i].name.c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(format_duration(items[i].total).c_str());
      ImGui::TableNextColumn();
      ImGui::Text("%llu", (unsigned long long)items[i].count);
    }
    ImGui::EndTable();
  };
  list("GPU ops inside it", f.kernels);
  list("CPU ops inside it", f.ops);
  list("Layers inside it", f.layers);
}

void write_range_marks(JsonWriter& j, const Viewer& v) {
  const RangeState& r = v.timeline.range;
  write_box(j, "ruler", r.ruler);
  j.field("active", r.active).field("t0_ns", r.t0).field("t1_ns", r.t1).field("flags", uint64_t(r.flags.size()));
  j.key("flag_labels").begin_array();
  for (const auto& [text, box] : r.flag_labels) {
    // Characters the font lacks (drawn as "?").
    uint64_t missing = 0;
    const char* end = text.c_str() + text.size();
    for (const char* c = text.c_str(); c < end;) {
      unsigned code = 0;
      const int n = ImTextCharFromUtf8(&code, c, end);
      if (n <= 0) break;
      missing += v.font->FindGlyphNoFallback(ImWchar(code)) == nullptr;
      c += n;
    }
    j.begin_object().field("text", std::string_view(text)).field("missing_glyphs", missing);
    write_box(j, "box", box);
    j.end_object();
  }
  j.end_array();
}

}  // namespace strata::viewer
