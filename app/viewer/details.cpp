// The details panel: what the selected item is, where it sits, what it cost on CPU and GPU,
// what bounds it, its flows (flows.cpp), a sortable table of its kernels, its arguments (read
// lazily from the file) and its source location when the trace has Python frames.
#include "app/viewer/viewer.h"

#include "render/elide.h"

#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace strata::viewer {

using render::ItemRef;

namespace {

void row(const Viewer& v, const char* key, const std::string& value) {
  ImGui::TableNextRow();
  ImGui::TableNextColumn();
  ImGui::TextDisabled("%s", key);
  ImGui::TableNextColumn();
  text_wrapped(v, value);
}

std::string pct(double a, double b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", b > 0 ? 100.0 * a / b : 0.0);
  return buf;
}

}  // namespace

void draw_details(Viewer& v) {
  if (!v.trace) return;
  const ItemRef sel = v.sel.hl.selected;
  render::Timeline& tl = v.trace->timeline;
  const TraceModel& m = *v.trace->model;
  if (!sel.valid()) {
    ImGui::PushTextWrapPos(0);
    ImGui::TextDisabled("Click an item on the timeline to see its details.");
    ImGui::Spacing();
    text_wrapped(v, m.path);  // a path cut where the line ends, not after each '.' of "../"
    ImGui::Text("%zu events on %zu tracks, %s", m.ev.size(), m.tracks.size(),
                format_duration(m.time_end - m.time_begin).c_str());
    // What the trace does not say and the annotation inferred instead, in words.
    if (const Annotation* an = v.trace->annotation.get(); an && !an->notes.empty()) {
      ImGui::Spacing();
      ImGui::TextDisabled("Notes on the annotation:");
      for (const std::string& n : an->notes) text_wrapped(v, "- " + n);
    }
    ImGui::Spacing();
    ImGui::TextDisabled("Press ? for the keys and what the colours mean.");
    ImGui::PopTextWrapPos();
    return;
  }
  std::string_view name = tl.name_of(sel);
  ImGui::PushFont(v.font_bold);
  ImGui::PushTextWrapPos(0);
  ImGui::TextUnformatted(name.data(), name.data() + std::min<size_t>(name.size(), 2000));
  ImGui::PopTextWrapPos();
  ImGui::PopFont();

  const WorkFigures& w = v.sel.work;  // core's figures for the selection (render::work_of)
  Ns start = w.begin, end = w.end, dur = end - start;
  bool gpu = sel.kind == ItemRef::Event && is_gpu_cat(m.ev.category(sel.index));
  EventId host = gpu ? m.host_side_of(sel.index) : kNoEvent;
  if (ImGui::BeginTable("facts", 2, ImGuiTableFlags_SizingFixedFit)) {
    ImGui::TableSetupColumn("k", ImGuiTableColumnFlags_WidthFixed);
    ImGui::TableSetupColumn("v", ImGuiTableColumnFlags_WidthStretch);
    if (sel.kind == ItemRef::Event) {
      row(v, "Category", m.category_names[m.ev.cat[sel.index]]);
      if (int64_t id = m.correlation_of(sel.index); id >= 0) row(v, "Correlation", std::to_string(id));
      else if (int64_t x = m.external_id_of(sel.index); x >= 0) row(v, "External id", std::to_string(x));
      uint32_t t = m.track_of(sel.index);
      for (const render::Lane& l : tl.lanes)
        if (l.kind == render::LaneKind::Track && l.index == t) row(v, "Track", tl.sections[l.section].title + " / " + l.title);
    } else {
      row(v, "Tier", tl.tiers().tiers[sel.tier].title);
    }
    row(v, "Start", fmt_time(v, double(start)));
    row(v, "Duration", format_duration(dur));
    if (!w.parent.empty()) row(v, "Share of parent", pct(double(w.share), 1.0) + " of " + w.parent.substr(0, 60));
    if (gpu) {
      if (host != kNoEvent) {
        row(v, "Launch to start", format_duration(start - m.ev.start[host]));
        EventId op = m.parent_of(host);
        if (op != kNoEvent) row(v, "CPU op", std::string(m.name_of(op).substr(0, 120)));
      }
    } else if (!w.gpu_ops.empty()) {
      row(v, "CPU time", format_duration(dur));
      row(v, "GPU time", format_duration(w.gpu_time) + " in " + std::to_string(w.gpu_ops.size()) + " ops (busy " +
                          format_duration(w.gpu_busy) + ")");
      row(v, "GPU span", format_duration(w.gpu_end - w.gpu_begin) + ", ends " +
                          format_duration(std::abs(w.gpu_end - end)) +
                          (w.gpu_end > end ? " after the CPU side" : " before the CPU side"));
      if (w.sync > 0) row(v, "Waiting", format_duration(w.sync) + " in calls that wait for the GPU");
      if (w.communication > 0)
        row(v, "Communication", format_duration(w.communication) + ", " +
                                 format_duration(w.comm_exposed) + " exposed (" +
                                 pct(double(w.communication - w.comm_exposed), double(w.communication)) + " hidden behind compute)");
      row(v, "Bound by", bound_reason(w));
    } else if (sel.kind == ItemRef::Event) {
      row(v, "GPU time", "none launched");
    } else {
      row(v, "Bound by", bound_reason(w));
    }
    if (w.flops.ranges) row(v, "FLOPs", flops_text(w.flops));
    ImGui::EndTable();
  }
  if (ImGui::SmallButton("Zoom to (F)")) focus_on(v, sel);
  if (v.sel.path.size() >= 2) {
    ImGui::SameLine();
    if (ImGui::SmallButton("Parent (U)")) select_parent(v);
  }
  if (sel.kind == ItemRef::Event) draw_flows(v, sel.index);

  // Source location: Python frames enclosing the event on its thread.
  if (sel.kind == ItemRef::Event) {
    EventId e = host != kNoEvent ? host : sel.index;
    std::vector<EventId> frames;
    for (EventId p = m.parent_of(e); p != kNoEvent && frames.size() < 40; p = m.parent_of(p))
      if (m.ev.category(p) == Cat::PythonFunction) frames.push_back(p);
    if (!frames.empty() && ImGui::CollapsingHeader("Source (Python stack)", ImGuiTreeNodeFlags_DefaultOpen)) {
      for (EventId f : frames) {
        std::string_view n = m.name_of(f);
        ImGui::BulletText("%.*s", int(std::min<size_t>(n.size(), 200)), n.data());
      }
    }
  }

  // Kernels: sortable table.
  if (!v.sel.work.gpu_ops.empty() && !gpu &&
      ImGui::CollapsingHeader(("GPU ops (" + std::to_string(v.sel.work.gpu_ops.size()) + ")").c_str(), ImGuiTreeNodeFlags_DefaultOpen)) {
    ImGuiTableFlags flags = ImGuiTableFlags_Sortable | ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY |
                            ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_Resizable | ImGuiTableFlags_SizingFixedFit;
    float h = std::min(ImGui::GetTextLineHeightWithSpacing() * float(v.sel.work.gpu_ops.size() + 2), 320.0f * v.scale);
    // Every column in a narrow panel too: the figures keep their widths and the names, which
    // take what is left, are shortened in the middle.
    if (ImGui::BeginTable("kernels", 4, flags, ImVec2(0, h))) {
      ImGui::TableSetupScrollFreeze(0, 1);
      ImGui::TableSetupColumn("GPU op", ImGuiTableColumnFlags_WidthStretch);
      ImGui::TableSetupColumn("Duration", ImGuiTableColumnFlags_DefaultSort | ImGuiTableColumnFlags_PreferSortDescending);
      ImGui::TableSetupColumn("Share");
      ImGui::TableSetupColumn("Start");
      ImGui::TableHeadersRow();
      v.panels.kernel_columns.clear();
      for (int c = 0; c < ImGui::TableGetColumnCount(); ++c)
        if (ImGui::TableGetColumnFlags(c) & ImGuiTableColumnFlags_IsVisible) v.panels.kernel_columns.emplace_back(ImGui::TableGetColumnName(c));
      if (ImGuiTableSortSpecs* ss = ImGui::TableGetSortSpecs(); ss && ss->SpecsCount > 0) {
        const ImGuiTableColumnSortSpecs& sp = ss->Specs[0];
        bool asc = sp.SortDirection == ImGuiSortDirection_Ascending;
        auto key = [&](EventId e) -> double {
          switch (sp.ColumnIndex) {
            case 1:
            case 2: return double(m.ev.dur[e]);
            case 3: return double(m.ev.start[e]);
            default: return 0;
          }
        };
        if (sp.ColumnIndex == 0)
          std::stable_sort(v.sel.work.gpu_ops.begin(), v.sel.work.gpu_ops.end(), [&](EventId a, EventId b) {
            return asc ? m.name_of(a) < m.name_of(b) : m.name_of(a) > m.name_of(b);
          });
        else
          std::stable_sort(v.sel.work.gpu_ops.begin(), v.sel.work.gpu_ops.end(),
                           [&](EventId a, EventId b) { return asc ? key(a) < key(b) : key(a) > key(b); });
        ss->SpecsDirty = false;
      }
      // Short names that stay distinct among the ops listed.
      std::vector<StrId> ids;
      for (EventId g : v.sel.work.gpu_ops) ids.push_back(m.ev.name[g]);
      std::sort(ids.begin(), ids.end());
      ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
      std::vector<std::string_view> full;
      for (StrId id : ids) full.push_back(m.strings.view(id));
      const std::vector<std::string_view> short_of = render::distinct_short_names(full);
      auto shown_name = [&](EventId g) {
        return short_of[size_t(std::lower_bound(ids.begin(), ids.end(), m.ev.name[g]) - ids.begin())];
      };
      ImGuiListClipper clip;
      clip.Begin(int(v.sel.work.gpu_ops.size()));
      while (clip.Step()) {
        for (int i = clip.DisplayStart; i < clip.DisplayEnd; ++i) {
          EventId k = v.sel.work.gpu_ops[size_t(i)];
          ImGui::TableNextRow();
          ImGui::TableNextColumn();
          std::string_view kn = m.name_of(k);
          // Drawn by hand after an empty label, shortened to its column.
          const ImVec2 at = ImGui::GetCursorScreenPos();
          const std::string shown = render::elide_middle(shown_name(k).substr(0, 200), ImGui::GetContentRegionAvail().x, v.metrics);
          ImGui::PushID(i);
          const bool clicked = ImGui::Selectable("##k", false, ImGuiSelectableFlags_SpanAllColumns);
          ImGui::PopID();
          ImGui::GetWindowDrawList()->AddText(at, ImGui::GetColorU32(ImGuiCol_Text), shown.c_str());
          if (clicked) {
            focus_on(v, ItemRef::event(k));
            ImGui::EndTable();
            return;
          }
          if (ImGui::IsItemHovered()) tooltip(v, "%.*s", int(std::min<size_t>(kn.size(), 400)), kn.data());
          ImGui::TableNextColumn();
          ImGui::TextUnformatted(format_duration(m.ev.dur[k]).c_str());
          ImGui::TableNextColumn();
          ImGui::TextUnformatted(pct(double(m.ev.dur[k]), double(w.gpu_time)).c_str());
          ImGui::TableNextColumn();
          ImGui::TextUnformatted(fmt_time(v, double(m.ev.start[k])).c_str());
        }
      }
      ImGui::EndTable();
    }
  }

  // Arguments: the event's JSON, read from the file only now.
  if (sel.kind == ItemRef::Event && ImGui::CollapsingHeader("Arguments")) {
    std::string_view src = m.source_of(sel.index);
    if (src.empty()) ImGui::TextDisabled("(not available)");
    else {
      std::string text;
      // A light pretty-print: one key per line.
      int depth = 0;
      bool in_str = false;
      for (size_t i = 0; i < src.size() && text.size() < 20000; ++i) {
        char c = src[i];
        if (in_str) {
          text += c;
          if (c == '\\' && i + 1 < src.size()) text += src[++i];
          else if (c == '"') in_str = false;
          continue;
        }
        if (c == '"') in_str = true, text += c;
        else if (c == '{' || c == '[') text += c, text += '\n', text.append(size_t(++depth) * 2, ' ');
        else if (c == '}' || c == ']') text += '\n', text.append(size_t(std::max(--depth, 0)) * 2, ' '), text += c;
        else if (c == ',') text += ",\n", text.append(size_t(depth) * 2, ' ');
        else if (c != ' ' && c != '\n' && c != '\t' && c != '\r') text += c;
      }
      ImGui::PushTextWrapPos(0);
      ImGui::TextUnformatted(text.c_str());
      ImGui::PopTextWrapPos();
    }
  }
}

}  // namespace strata::viewer
