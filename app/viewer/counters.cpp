// Memory and counter lanes made readable: an axis (the peak at the top, zero at the bottom),
// the peak marked with its time, the value under the cursor, and a click on the peak that
// selects the op allocating there.
#include "app/viewer/viewer.h"

#include <imgui.h>

#include <algorithm>
#include <cinttypes>

namespace strata::viewer {

namespace {

std::string value_text(const render::CounterTrack& c, double v) { return c.bytes ? format_bytes(v) : strprintf("%g", v); }

// The value holding at time t: the last sample at or before it.
double value_at(const render::CounterTrack& c, Ns t) {
  auto it = std::upper_bound(c.ts.begin(), c.ts.end(), t);
  return it == c.ts.begin() ? 0 : c.value[size_t(it - c.ts.begin()) - 1];
}

// The op that was running on the allocating thread at the series' peak.
EventId op_at_peak(const TraceModel& m, const render::CounterTrack& c) {
  for (size_t i = 0; i < m.memory.size(); ++i)
    if (m.memory.ts[i] == c.max_at && double(m.memory.total_allocated[i]) == c.max_value && m.memory.track[i] < m.tracks.size())
      return m.event_at(m.memory.track[i], m.memory.ts[i]);
  return kNoEvent;
}

}  // namespace

void draw_counter_lanes(Viewer& v, float area_x, float rows_y, float area_w, bool hovered) {
  render::Timeline& tl = v.trace->timeline;
  const render::FrameLayout& fl = v.timeline.frame;
  const render::TimeView& view = v.timeline.view;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const float s = v.scale;
  for (const render::RowHit& row : fl.rows) {
    if (row.kind != render::LaneKind::Counter) continue;
    const render::CounterTrack& c = tl.counters[row.source];
    if (c.ts.empty() || c.max_value <= 0) continue;
    const float y0 = rows_y + row.y0, y1 = rows_y + row.y1;
    // Axis: the peak's value at the top, zero at the bottom.
    const std::string top = value_text(c, c.max_value);
    dl->AddText(ImVec2(area_x + 3 * s, y0 + 1), IM_COL32(200, 200, 210, 200), top.c_str());
    dl->AddText(ImVec2(area_x + 3 * s, y1 - ImGui::GetTextLineHeight() - 1), IM_COL32(160, 160, 170, 160), "0");
    dl->AddLine(ImVec2(area_x, y0 + 4 * s), ImVec2(area_x + area_w, y0 + 4 * s), IM_COL32(255, 255, 255, 24));
    // The peak: a marker at its time, with the time.
    const float px = area_x + view.x_of(double(c.max_at));
    const bool peak_in_view = px >= area_x && px <= area_x + area_w;
    bool on_peak = false;
    if (peak_in_view) {
      dl->AddTriangleFilled(ImVec2(px - 5 * s, y0), ImVec2(px + 5 * s, y0), ImVec2(px, y0 + 8 * s), IM_COL32(240, 90, 70, 255));
      dl->AddLine(ImVec2(px, y0 + 8 * s), ImVec2(px, y1), IM_COL32(240, 90, 70, 160), 1.5f * s);
      std::string when = "peak " + top + " at " + fmt_time(v, double(c.max_at));
      dl->AddText(ImVec2(std::min(px + 7 * s, area_x + area_w - ImGui::CalcTextSize(when.c_str()).x - 4 * s), y0 + 1),
                  IM_COL32(250, 200, 190, 255), when.c_str());
      on_peak = hovered && std::abs(mouse.x - px) <= 6 * s && mouse.y >= y0 && mouse.y < y1;
    }
    if (!hovered || mouse.y < y0 || mouse.y >= y1 || mouse.x < area_x || mouse.x > area_x + area_w) continue;
    const Ns t = Ns(view.t_of(mouse.x - area_x));
    ImGui::BeginTooltip();
    ImGui::Text("%s at %s: %s", c.title.c_str(), fmt_time(v, double(t)).c_str(), value_text(c, value_at(c, t)).c_str());
    ImGui::TextDisabled("peak %s at %s%s", top.c_str(), fmt_time(v, double(c.max_at)).c_str(),
                        on_peak ? " (click: select the op allocating there)" : "");
    ImGui::EndTooltip();
    if (on_peak && ImGui::IsMouseClicked(ImGuiMouseButton_Left)) {
      EventId op = op_at_peak(*v.trace->model, c);
      if (op != kNoEvent) select(v, render::ItemRef::event(op), false);
    }
  }
}

}  // namespace strata::viewer
