// The summary panel: the ranked tables of phases, layers, kernels and CPU ops
// (summary_tables.cpp), then GPU utilisation, idle causes, GPU work, iteration bars and the
// memory peak, drawn as small charts from the annotation's analyses.
#include "app/viewer/viewer.h"
#include "core/annotate/summary_rows.h"
#include "render/legend.h"

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

// Utilisation, idle causes and GPU work; the iterations; the memory peak: a column each where
// there is room.
void draw_charts(Viewer& v) {
  // Every figure here is the annotation's (core), as `strata summary` prints it.
  const Annotation& an = *v.trace->annotation;
  const Analyses& r = an.analyses;
  render::Timeline& tl = v.trace->timeline;
  const float s = v.scale;
  const Ns window = r.window_end - r.window_begin;
  float avail = ImGui::GetContentRegionAvail().x;
  int cols = avail > 900 * s ? 3 : avail > 560 * s ? 2 : 1;
  if (!ImGui::BeginTable("summary", cols, ImGuiTableFlags_SizingStretchSame)) return;
  ImGui::TableNextColumn();
  float cw = ImGui::GetContentRegionAvail().x;
  auto heading = [&](const char* t) {
    ImGui::PushFont(v.font_bold);
    ImGui::TextUnformatted(t);
    ImGui::PopFont();
  };

  // Utilisation per GPU over the iterations' window, and why the GPUs sat idle.
  heading("GPU utilisation");
  ImGui::TextDisabled("over %s (%s)", an.iterations.empty() ? "the trace" : "the iterations",
                      format_duration(window).c_str());
  bool any_device = false;
  for (const DeviceUtil& d : r.utilization) {
    if (d.stream >= 0) continue;
    any_device = true;
    double util = d.elapsed > 0 ? double(d.busy) / double(d.elapsed) : 0;
    char val[64];
    std::snprintf(val, sizeof val, "%.1f%% busy", util * 100);
    bar(v, "GPU " + std::to_string(d.device) + "##util" + std::to_string(d.device), val, util,
        render::base_colour(render::Hue::Kernel), cw);
  }
  if (!any_device) ImGui::TextDisabled("No GPU work in this trace.");
  if (r.idle.total > 0) {
    // Idle causes as one stacked bar.
    ImVec2 p = ImGui::GetCursorScreenPos();
    float h = 10 * s;
    ImDrawList* dl = ImGui::GetWindowDrawList();
    struct Part { Ns ns; render::Rgba c; const char* what; };
    std::vector<Part> parts;
    for (size_t k = 0; k < size_t(IdleCause::Count); ++k)
      parts.push_back({r.idle.by_cause[k], render::idle_cause_colour(IdleCause(k)), idle_cause_name(IdleCause(k))});
    float x = p.x;
    for (const Part& pt : parts) {
      float w = float(double(pt.ns) / double(r.idle.total)) * cw;
      dl->AddRectFilled(ImVec2(x, p.y), ImVec2(x + w, p.y + h), ImU32(pt.c));
      x += w;
    }
    ImGui::Dummy(ImVec2(cw, h));
    ImGui::Text("GPU idle %s in %llu gaps:", format_duration(r.idle.total).c_str(), (unsigned long long)r.idle.count);
    for (const Part& pt : parts) {
      ImGui::ColorButton(pt.what, ImGui::ColorConvertU32ToFloat4(ImU32(pt.c)), ImGuiColorEditFlags_NoTooltip, ImVec2(8 * s, 8 * s));
      ImGui::SameLine();
      ImGui::Text("%s %s (%.0f%%)", pt.what, format_duration(pt.ns).c_str(),
                  100.0 * double(pt.ns) / double(r.idle.total));
    }
  }
  if (r.kernel_total > 0) {
    ImGui::Spacing();
    heading("GPU work");
    ImGui::Text("compute %s, communication %s", format_duration(r.compute).c_str(),
                format_duration(r.communication).c_str());
    if (r.communication > 0) {
      ImGui::Text("communication overlapped with compute: %s (%.0f%%)", format_duration(r.compute_comm_overlap).c_str(),
                  100.0 * double(r.compute_comm_overlap) / double(r.communication));
      const Ns exposed = exposed_communication(r);
      ImGui::Text("exposed (no compute hides it): %s (%.0f%%)", format_duration(exposed).c_str(),
                  100.0 * double(exposed) / double(r.communication));
    }
    ImGui::Text("memory ops %s; tensor-core kernels %.1f%% of kernel time", format_duration(r.memory_ops).c_str(),
                100.0 * double(r.tensor_core) / double(r.kernel_total));
  }
  // Iterations: bars of duration, GPU-busy part filled.
  if (cols > 1) ImGui::TableNextColumn();
  else ImGui::Spacing();
  cw = ImGui::GetContentRegionAvail().x;
  heading("Iterations");
  const render::Tier* iter_tier = nullptr;
  for (const render::Tier& t : tl.tiers().tiers)
    if (t.kind == render::TierKind::Iteration) iter_tier = &t;
  if (an.iterations.empty()) {
    ImGui::TextDisabled("No iterations found.");
  } else {
    ImGui::Text("%zu iteration%s (from %s), median %s", an.iterations.size(), an.iterations.size() == 1 ? "" : "s",
                iteration_source_name(an.iteration_source), format_duration(r.iter_median).c_str());
    Ns maxd = 1;
    for (const Iteration& it : an.iterations) maxd = std::max(maxd, it.end - it.begin);
    float h = 90 * s;
    ImVec2 p = ImGui::GetCursorScreenPos();
    ImGui::InvisibleButton("iters", ImVec2(cw, h));
    ImDrawList* dl = ImGui::GetWindowDrawList();
    size_t n = an.iterations.size();
    float bw = cw / float(n);
    int hovered = -1;
    for (size_t i = 0; i < n; ++i) {
      const Iteration& it = an.iterations[i];
      const Ns dur = it.end - it.begin, busy = i < r.iteration_gpu_busy.size() ? r.iteration_gpu_busy[i] : 0;
      float x0 = p.x + float(i) * bw, x1 = x0 + std::max(1.0f, bw - (bw > 4 ? 2 * s : 0));
      float top = p.y + h - float(double(dur) / double(maxd)) * h;
      float busy_top = p.y + h - float(double(busy) / double(maxd)) * h;
      dl->AddRectFilled(ImVec2(x0, top), ImVec2(x1, p.y + h), ImU32(render::base_colour(render::Hue::Iteration)));
      dl->AddRectFilled(ImVec2(x0, busy_top), ImVec2(x1, p.y + h), ImU32(render::darken(render::base_colour(render::Hue::Kernel), 0.1f)));
      ImVec2 mp = ImGui::GetIO().MousePos;
      if (mp.x >= x0 && mp.x < x0 + bw && mp.y >= p.y && mp.y < p.y + h) hovered = int(i);
    }
    if (hovered >= 0 && ImGui::IsItemHovered()) {
      const Iteration& it = an.iterations[size_t(hovered)];
      const Ns dur = it.end - it.begin, busy = size_t(hovered) < r.iteration_gpu_busy.size() ? r.iteration_gpu_busy[size_t(hovered)] : 0;
      tooltip(v, "%s: %s, GPU busy %s (%.0f%%)%s", it.name.c_str(), format_duration(dur).c_str(),
                        format_duration(busy).c_str(), 100.0 * double(busy) / double(std::max<Ns>(dur, 1)),
                        it.partial ? "\npartial: cut by the trace's edge" : "");
      if (ImGui::IsItemClicked() && iter_tier) {
        uint32_t span = iter_tier->span_at(0, it.begin);
        if (span != UINT32_MAX) focus_on(v, render::ItemRef::span(uint32_t(iter_tier - tl.tiers().tiers.data()), span));
      }
    }
    ImGui::TextDisabled("orange: iteration time; green: GPU busy within it");
  }

  // The memory peak.
  if (cols > 2) ImGui::TableNextColumn();
  else ImGui::Spacing();
  cw = ImGui::GetContentRegionAvail().x;
  heading("Memory peak");
  const MemoryUse& mu = r.memory;
  if (!mu.present) {
    ImGui::TextDisabled("No allocator events (profile_memory was off).");
  } else {
    for (const DeviceMemory& d : mu.devices) {
      ImGui::PushID(&d);
      ImGui::Text("%s: allocated %s", memory_device_name(d.device_type, d.device_id).c_str(), format_bytes(double(d.peak_allocated)).c_str());
      if (mu.reserved_recorded) {
        ImGui::SameLine();
        ImGui::TextDisabled("(reserved %s)", format_bytes(double(d.peak_reserved)).c_str());
      }
      if (const int64_t headroom = memory_headroom(d, mu.reserved_recorded); headroom >= 0)
        ImGui::TextDisabled("of %s: headroom %s", format_bytes(double(d.capacity)).c_str(), format_bytes(double(headroom)).c_str());
      if (!d.peak_where.empty()) text_wrapped(v, "at " + d.peak_where);
      draw_memory_categories(v, d.at_peak, cw);
      if (ImGui::SmallButton("What is alive at the peak")) pick_memory(v, d.at_peak.through);
      ImGui::PopID();
    }
  }
  ImGui::Text("Trace span %s, %zu events", format_duration(v.trace->model->time_end - v.trace->model->time_begin).c_str(),
              v.trace->model->ev.size());
  ImGui::EndTable();
}

}  // namespace

void draw_summary(Viewer& v) {
  if (!v.trace || !v.trace->annotation) return;
  // The toggle stays in view above what scrolls: it orders the tables under it.
  draw_rank_toggle(v);
  ImGui::BeginChild("summary_body");
  draw_summary_tables(v);
  ImGui::Separator();
  draw_charts(v);
  ImGui::EndChild();
}

}  // namespace strata::viewer
