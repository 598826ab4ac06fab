// What is alive at a moment on a memory lane: a click there (or on its peak) puts core's
// live_memory in the details panel, by category (weights, gradients, optimizer state,
// activations, temporaries, other), by the layer that allocated it, and the largest
// allocations with the ops that made them; those ops are highlighted on the timeline.
#include "app/viewer/viewer.h"

#include <imgui.h>

#include <algorithm>

namespace strata::viewer {

namespace {

constexpr render::Rgba kCategoryColour[size_t(MemoryCategory::Count)] = {
    render::rgba(86, 180, 233),   // weights
    render::rgba(230, 159, 0),    // gradients
    render::rgba(0, 158, 115),    // optimizer state
    render::rgba(204, 121, 167),  // activations
    render::rgba(240, 228, 66),   // temporaries
    render::rgba(150, 150, 160),  // other
};

}  // namespace

void pick_memory(Viewer& v, uint32_t event) {
  if (!v.trace || !v.trace->annotation) return;
  const TraceModel& m = *v.trace->model;
  clear_range(v);
  select(v, {}, false);
  v.sel.memory = live_memory(m, *v.trace->annotation, event);
  v.sel.memory_picked = true;
  std::vector<EventId>& ops = v.sel.hl.related;
  for (const LiveMemory::Allocation& al : v.sel.memory.allocations)
    if (EventId op = allocating_op(m, al.event); op != kNoEvent) ops.push_back(op);
  std::sort(ops.begin(), ops.end());
  ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
  // Bring the device's memory lane into view.
  const render::Timeline& tl = v.trace->timeline;
  for (uint32_t li = 0; li < tl.lanes.size(); ++li) {
    const render::Lane& lane = tl.lanes[li];
    if (lane.kind != render::LaneKind::Counter) continue;
    const render::CounterTrack& c = tl.counters[lane.index];
    bool pinned = false;
    const float y = tl.lane_row_y(li, 0, v.timeline.rows, v.timeline.scroll_y, &pinned);
    if (c.device_type == v.sel.memory.device_type && c.device_id == v.sel.memory.device_id && !pinned) scroll_to_row(v, y);
  }
}

void draw_memory_categories(Viewer& v, const LiveMemory& l, float width) {
  const float s = v.scale;
  const ImVec2 p = ImGui::GetCursorScreenPos();
  const float h = ImGui::GetTextLineHeight();
  ImGui::InvisibleButton("##memory_bar", ImVec2(width, h));
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->AddRectFilled(p, ImVec2(p.x + width, p.y + h), IM_COL32(45, 47, 53, 255));
  const double total = double(std::max<int64_t>(l.allocated, 1));
  float x = p.x;
  for (size_t c = 0; c < size_t(MemoryCategory::Count); ++c) {
    if (l.bytes[c] <= 0) continue;
    const float w = float(double(l.bytes[c]) / total) * width;
    dl->AddRectFilled(ImVec2(x, p.y), ImVec2(x + w, p.y + h), ImU32(kCategoryColour[c]));
    x += w;
  }
  for (size_t c = 0; c < size_t(MemoryCategory::Count); ++c) {
    if (!l.bytes[c]) continue;
    const ImVec2 q = ImGui::GetCursorScreenPos();
    const float box = ImGui::GetTextLineHeight() * 0.7f;
    dl->AddRectFilled(ImVec2(q.x, q.y + 2 * s), ImVec2(q.x + box, q.y + 2 * s + box), ImU32(kCategoryColour[c]));
    ImGui::Dummy(ImVec2(box + 2 * s, box));
    ImGui::SameLine();
    ImGui::Text("%-16s %10s  %4.1f%%", memory_category_name(MemoryCategory(c)), format_bytes(double(l.bytes[c])).c_str(),
                100.0 * double(l.bytes[c]) / total);
  }
  if (!l.split) ImGui::TextDisabled("The trace records no addresses: what is alive cannot be told apart.");
  else if (l.before_trace > 0)
    text_wrapped(v, strprintf("%s was allocated before the trace began: counted as %s, %s.", format_bytes(double(l.before_trace)).c_str(),
                              memory_category_name(l.before_trace_as),
                              l.before_trace_as == MemoryCategory::Weights ? "since the trace starts before the first iteration"
                                                                           : "since training ran before the trace"));
}

void draw_memory_details(Viewer& v) {
  const LiveMemory& l = v.sel.memory;
  const TraceModel& m = *v.trace->model;
  ImGui::PushFont(v.font_bold);
  ImGui::Text("Memory on %s: %s allocated", memory_device_name(l.device_type, l.device_id).c_str(), format_bytes(double(l.allocated)).c_str());
  ImGui::PopFont();
  ImGui::TextDisabled("alive at %s", fmt_time(v, double(l.at)).c_str());
  if (ImGui::SmallButton("Clear")) {
    select(v, {}, false);
    return;
  }
  draw_memory_categories(v, l, ImGui::GetContentRegionAvail().x);
  const AnnotationTree& t = v.trace->annotation->tree;
  if (!l.layers.empty() && ImGui::CollapsingHeader("Allocated by layer", ImGuiTreeNodeFlags_DefaultOpen) &&
      ImGui::BeginTable("memory_layers", 2, ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit)) {
    ImGui::TableSetupColumn("layer", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableSetupColumn("bytes");
    for (size_t i = 0; i < l.layers.size() && i < 20; ++i) {
      const LiveMemory::Layer& la = l.layers[i];
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      // The iteration is in the tooltip: the row keeps the phase and the layers.
      std::string_view shown = la.path;
      if (shown.starts_with("Iteration ") && shown.find('/') != std::string_view::npos) shown.remove_prefix(shown.find('/') + 1);
      const std::string label = (la.node == kNoNode ? std::string("(no layer)") : std::string(shown)) + "##ml" + std::to_string(i);
      if (ImGui::Selectable(label.c_str(), false, ImGuiSelectableFlags_SpanAllColumns) && la.node != kNoNode)
        animate_to(v, double(t.begin[la.node]), double(t.end[la.node]));
      if (ImGui::IsItemHovered() && la.node != kNoNode) tooltip(v, "%s\nclick: zoom to it", la.path.c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(format_bytes(double(la.bytes)).c_str());
    }
    ImGui::EndTable();
  }
  if (!l.allocations.empty() && ImGui::CollapsingHeader("Largest allocations", ImGuiTreeNodeFlags_DefaultOpen) &&
      ImGui::BeginTable("memory_allocs", 3, ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit)) {
    ImGui::TableSetupColumn("op", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableSetupColumn("bytes");
    ImGui::TableSetupColumn("what");
    for (size_t i = 0; i < l.allocations.size() && i < 50; ++i) {
      const LiveMemory::Allocation& al = l.allocations[i];
      const EventId op = allocating_op(m, al.event);
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      const std::string name = op == kNoEvent ? std::string("?") : std::string(m.name_of(op).substr(0, 80));
      if (ImGui::Selectable((name + "##ma" + std::to_string(i)).c_str(), false, ImGuiSelectableFlags_SpanAllColumns) && op != kNoEvent)
        focus_on(v, render::ItemRef::event(op));
      if (ImGui::IsItemHovered())
        tooltip(v, "allocated at %s%s%s\nclick: select the op", fmt_time(v, double(m.memory.ts[al.event])).c_str(),
                          al.layer == kNoNode ? "" : " in ", al.layer == kNoNode ? "" : t.path(al.layer).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(format_bytes(double(m.memory.bytes[al.event])).c_str());
      ImGui::TableNextColumn();
      ImGui::TextColored(ImColor(ImU32(kCategoryColour[size_t(al.category)])), "%s", memory_category_name(al.category));
    }
    ImGui::EndTable();
  }
}

}  // namespace strata::viewer
