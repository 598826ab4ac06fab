// Memory and counter lanes made readable: an axis (the top value, zero at the bottom), the
// peak marked with its time, the device's capacity and headroom, the value under the cursor;
// a click on a memory lane shows what is alive at that moment (memory.cpp).
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

// The memory event at the series' peak (the first reaching it), else UINT32_MAX.
uint32_t peak_event(const MemoryEvents& me, const render::CounterTrack& c) {
  for (uint32_t i = 0; i < me.size(); ++i)
    if (me.ts[i] == c.max_at && me.device_type[i] == c.device_type && me.device_id[i] == c.device_id &&
        double(me.total_allocated[i]) == c.max_value)
      return i;
  return UINT32_MAX;
}

}  // namespace

bool draw_counter_lanes(Viewer& v, float area_x, float rows_y, float area_w, bool hovered, bool clicked) {
  render::Timeline& tl = v.trace->timeline;
  const render::FrameLayout& fl = v.timeline.frame;
  const render::TimeView& view = v.timeline.view;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const float s = v.scale;
  bool taken = false;
  if (v.sel.memory_picked) {  // the moment whose memory the details panel shows
    const float x = area_x + view.x_of(double(v.sel.memory.at));
    if (x >= area_x && x <= area_x + area_w)
      dl->AddLine(ImVec2(x, rows_y), ImVec2(x, rows_y + v.timeline.height), IM_COL32(250, 220, 120, 170), 1.5f * s);
  }
  for (const render::RowHit& row : fl.rows) {
    if (row.kind != render::LaneKind::Counter) continue;
    const render::CounterTrack& c = tl.counters[row.source];
    if (c.ts.empty() || c.axis_max <= 0) continue;
    const float y0 = rows_y + row.y0, y1 = rows_y + row.y1;
    // Axis: the lane's top value, zero at the bottom.
    const std::string top = value_text(c, c.max_value);
    dl->AddText(ImVec2(area_x + 3 * s, y0 + 1), IM_COL32(200, 200, 210, 200), value_text(c, c.axis_max).c_str());
    dl->AddText(ImVec2(area_x + 3 * s, y1 - ImGui::GetTextLineHeight() - 1), IM_COL32(160, 160, 170, 160), "0");
    dl->AddLine(ImVec2(area_x, y0 + 4 * s), ImVec2(area_x + area_w, y0 + 4 * s), IM_COL32(255, 255, 255, 24));
    // The device's capacity: a line where it is within the lane, and the headroom left at the peak.
    if (c.capacity > 0) {
      const double held = c.reserved.empty() ? c.max_value : c.max_reserved;
      std::string cap = "capacity " + format_bytes(c.capacity) + ", headroom " + format_bytes(std::max(0.0, c.capacity - held)) +
                        (c.reserved.empty() ? "" : " (after reserved)");
      if (c.capacity <= c.axis_max) {
        const float cy = y1 - 2 - float(c.capacity / c.axis_max) * (y1 - y0 - 6);
        for (float x = area_x; x < area_x + area_w; x += 8 * s) dl->AddLine(ImVec2(x, cy), ImVec2(x + 4 * s, cy), IM_COL32(250, 220, 120, 200), s);
      }
      const ImVec2 ts = ImGui::CalcTextSize(cap.c_str());
      dl->AddText(ImVec2(area_x + area_w - ts.x - 4 * s, y1 - ts.y - 1), IM_COL32(250, 220, 120, 220), cap.c_str());
    }
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
    const bool memory = c.device_type >= 0;
    begin_tooltip(v);
    ImGui::Text("%s at %s: %s", c.title.c_str(), fmt_time(v, double(t)).c_str(), value_text(c, value_at(c, t)).c_str());
    ImGui::TextDisabled("peak %s at %s%s", top.c_str(), fmt_time(v, double(c.max_at)).c_str(),
                        memory ? on_peak ? "\nclick: what is alive at the peak" : "\nclick: what is alive at this moment" : "");
    end_tooltip(v);
    if (memory && clicked) {
      const MemoryEvents& me = v.trace->model->memory;
      const uint32_t e = on_peak ? peak_event(me, c) : memory_event_at(me, c.device_type, c.device_id, t);
      if (e != UINT32_MAX) pick_memory(v, e);
      taken = true;
    }
  }
  return taken;
}

}  // namespace strata::viewer
