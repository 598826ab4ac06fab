// The summary panel: GPU utilisation, iteration bars, top kernels and CPU ops, GPU idle
// causes and memory peaks, drawn as small charts.
#include "app/viewer/viewer.h"

#include <imgui.h>

#include <algorithm>
#include <cstdio>

namespace strata::viewer {

namespace {

// A horizontal bar with a label drawn over it; returns true when clicked.
bool bar(Viewer& v, const std::string& label, const std::string& value, double frac, render::Rgba colour, float width) {
  const float s = v.scale;
  ImVec2 p = ImGui::GetCursorScreenPos();
  float h = ImGui::GetTextLineHeight() + 4 * s;
  ImGui::InvisibleButton(label.c_str(), ImVec2(width, h));
  bool clicked = ImGui::IsItemClicked();
  bool hov = ImGui::IsItemHovered();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->AddRectFilled(p, ImVec2(p.x + width, p.y + h), IM_COL32(45, 47, 53, 255));
  dl->AddRectFilled(p, ImVec2(p.x + float(std::clamp(frac, 0.0, 1.0)) * width, p.y + h), ImU32(colour));
  if (hov) dl->AddRect(p, ImVec2(p.x + width, p.y + h), IM_COL32(255, 255, 255, 120));
  ImVec2 vs = ImGui::CalcTextSize(value.c_str());
  std::string lv_owned = label.substr(0, label.find("##"));
  std::string_view lv = lv_owned;
  render::FittedLabel fit = render::fit_label(lv, width - vs.x - 16 * s, v.metrics);
  std::string shown(lv.substr(0, fit.bytes));
  if (fit.ellipsis) shown += "\xE2\x80\xA6";
  dl->AddText(ImVec2(p.x + 4 * s, p.y + 2 * s), IM_COL32(240, 240, 245, 255), shown.c_str());
  dl->AddText(ImVec2(p.x + width - vs.x - 4 * s, p.y + 2 * s), IM_COL32(240, 240, 245, 255), value.c_str());
  return clicked;
}

}  // namespace

void draw_summary(Viewer& v) {
  if (!v.trace) return;
  const render::Summary& sm = v.trace->summary;
  const TraceModel& m = *v.trace->model;
  render::Timeline& tl = v.trace->timeline;
  const float s = v.scale;
  float avail = ImGui::GetContentRegionAvail().x;
  int cols = avail > 900 * s ? 3 : avail > 560 * s ? 2 : 1;
  if (!ImGui::BeginTable("summary", cols, ImGuiTableFlags_SizingStretchSame)) return;
  ImGui::TableNextColumn();
  float cw = ImGui::GetContentRegionAvail().x;

  // Utilisation per GPU and idle causes.
  ImGui::PushFont(v.font_bold);
  ImGui::TextUnformatted("GPU utilisation");
  ImGui::PopFont();
  if (sm.devices.empty()) ImGui::TextDisabled("No GPU work in this trace.");
  for (const render::DeviceBusy& d : sm.devices) {
    double util = d.span > 0 ? double(d.busy) / double(d.span) : 0;
    char val[64];
    std::snprintf(val, sizeof val, "%.1f%% busy", util * 100);
    bar(v, "GPU " + std::to_string(d.device) + "##util" + std::to_string(d.device), val, util,
        render::base_colour(render::Hue::Kernel), cw);
    Ns idle = d.idle_host + d.idle_short + d.idle_other;
    if (idle > 0) {
      // Idle causes as one stacked bar.
      ImVec2 p = ImGui::GetCursorScreenPos();
      float h = 10 * s;
      ImDrawList* dl = ImGui::GetWindowDrawList();
      struct Part { Ns ns; render::Rgba c; const char* what; } parts[] = {
          {d.idle_host, render::base_colour(render::Hue::Backward), "CPU launched late"},
          {d.idle_short, render::base_colour(render::Hue::DataLoading), "launch gaps < 10 us"},
          {d.idle_other, render::base_colour(render::Hue::Python), "other (sync, data)"}};
      float x = p.x;
      for (const Part& pt : parts) {
        float w = float(double(pt.ns) / double(idle)) * cw;
        dl->AddRectFilled(ImVec2(x, p.y), ImVec2(x + w, p.y + h), ImU32(pt.c));
        x += w;
      }
      ImGui::Dummy(ImVec2(cw, h));
      for (const Part& pt : parts) {
        ImGui::ColorButton(pt.what, ImGui::ColorConvertU32ToFloat4(ImU32(pt.c)), ImGuiColorEditFlags_NoTooltip,
                           ImVec2(8 * s, 8 * s));
        ImGui::SameLine();
        ImGui::Text("%s %s (%.0f%%)", pt.what, render::format_duration(double(pt.ns)).c_str(), 100.0 * double(pt.ns) / double(idle));
      }
    }
  }
  ImGui::Spacing();
  ImGui::PushFont(v.font_bold);
  ImGui::TextUnformatted("Memory peak");
  ImGui::PopFont();
  if (sm.memory_peaks.empty()) ImGui::TextDisabled("No allocator events (profile_memory was off).");
  for (const auto& [title, peak] : sm.memory_peaks) ImGui::Text("%s: %.1f MiB", title.c_str(), peak / double(1 << 20));
  ImGui::Text("Trace span %s, %zu events", render::format_duration(double(sm.span)).c_str(), m.ev.size());

  // Iterations: bars of duration, GPU-busy part filled.
  if (cols > 1) ImGui::TableNextColumn();
  else ImGui::Spacing();
  cw = ImGui::GetContentRegionAvail().x;
  ImGui::PushFont(v.font_bold);
  ImGui::TextUnformatted("Iterations");
  ImGui::PopFont();
  if (sm.iterations.empty()) ImGui::TextDisabled("No ProfilerStep ranges; the annotation will find iterations.");
  else {
    Ns maxd = 0, sum = 0;
    for (const auto& it : sm.iterations) maxd = std::max(maxd, it.dur), sum += it.dur;
    ImGui::Text("%zu iterations, mean %s", sm.iterations.size(), render::format_duration(double(sum) / double(sm.iterations.size())).c_str());
    float h = 90 * s;
    ImVec2 p = ImGui::GetCursorScreenPos();
    ImGui::InvisibleButton("iters", ImVec2(cw, h));
    ImDrawList* dl = ImGui::GetWindowDrawList();
    size_t n = sm.iterations.size();
    float bw = cw / float(n);
    int hovered = -1;
    for (size_t i = 0; i < n; ++i) {
      const auto& it = sm.iterations[i];
      float x0 = p.x + float(i) * bw, x1 = x0 + std::max(1.0f, bw - (bw > 4 ? 2 * s : 0));
      float top = p.y + h - float(double(it.dur) / double(maxd)) * h;
      float busy_top = p.y + h - float(double(it.gpu_busy) / double(maxd)) * h;
      dl->AddRectFilled(ImVec2(x0, top), ImVec2(x1, p.y + h), ImU32(render::base_colour(render::Hue::Iteration)));
      dl->AddRectFilled(ImVec2(x0, busy_top), ImVec2(x1, p.y + h), ImU32(render::darken(render::base_colour(render::Hue::Kernel), 0.1f)));
      ImVec2 mp = ImGui::GetIO().MousePos;
      if (mp.x >= x0 && mp.x < x0 + bw && mp.y >= p.y && mp.y < p.y + h) hovered = int(i);
    }
    if (hovered >= 0 && ImGui::IsItemHovered()) {
      const auto& it = sm.iterations[size_t(hovered)];
      ImGui::SetTooltip("%s: %s, GPU busy %s (%.0f%%)", it.name.c_str(), render::format_duration(double(it.dur)).c_str(),
                        render::format_duration(double(it.gpu_busy)).c_str(), 100.0 * double(it.gpu_busy) / double(std::max<Ns>(it.dur, 1)));
      if (ImGui::IsItemClicked()) {
        const render::Tier& t = tl.tiers().tiers[0];
        focus_on(v, render::ItemRef::span(0, t.levels[0].begin + uint32_t(hovered)));
      }
    }
    ImGui::TextDisabled("orange: iteration time; green: GPU busy within it");
  }

  // Top kernels and CPU ops.
  if (cols > 2) ImGui::TableNextColumn();
  else ImGui::Spacing();
  cw = ImGui::GetContentRegionAvail().x;
  auto top_list = [&](const char* title, const std::vector<render::NameTotal>& list, render::Hue hue, Ns denom) {
    ImGui::PushFont(v.font_bold);
    ImGui::TextUnformatted(title);
    ImGui::PopFont();
    if (list.empty()) {
      ImGui::TextDisabled("none");
      return;
    }
    Ns top = list.front().total;
    for (size_t i = 0; i < list.size() && i < 8; ++i) {
      const auto& k = list[i];
      std::string_view n = m.strings.view(k.name);
      std::string label = std::string(render::short_name(n).substr(0, 120)) + "##" + title + std::to_string(i);
      char val[64];
      std::snprintf(val, sizeof val, "%s  %.0f%%  x%llu", render::format_duration(double(k.total)).c_str(),
                    denom > 0 ? 100.0 * double(k.total) / double(denom) : 0.0, (unsigned long long)k.count);
      if (bar(v, label, val, double(k.total) / double(top), render::darken(render::base_colour(hue), 0.25f), cw))
        focus_on(v, render::ItemRef::event(k.longest));
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip("%.*s\nclick: go to the longest one", int(std::min<size_t>(n.size(), 300)), n.data());
    }
  };
  top_list("Top GPU kernels (total time)", sm.top_kernels, render::Hue::Kernel, sm.gpu_total);
  ImGui::Spacing();
  top_list("Top CPU ops (total time)", sm.top_ops, render::Hue::CpuOp, 0);
  ImGui::EndTable();
}

}  // namespace strata::viewer
