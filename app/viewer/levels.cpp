// Breadcrumbs (the focus path of the selection) and the levels view in Hotline's manner:
// stacked rows, each holding the children of the item chosen in the row above, rescaled to
// full width after noise reduction, with durations and shares on the blocks; the blocks are
// sized by wall time or by GPU time (render/level_layout's level_block_edges).
#include "app/viewer/viewer.h"

#include "render/elide.h"

#include <imgui.h>

#include <algorithm>

namespace strata::viewer {

using render::ItemRef;

void draw_breadcrumbs(Viewer& v) {
  if (!v.trace) return;
  render::Timeline& tl = v.trace->timeline;
  const float s = v.scale;
  const ImVec2 pad = ImGui::GetStyle().FramePadding;
  const float room = ImGui::GetContentRegionAvail().x;
  const std::vector<ItemRef> path = v.sel.path;  // copy: a click changes it
  // Crumb 0 is the whole trace. A name longer than a share of the room shows its short form,
  // and that, if still too long, elided in the middle.
  const float cap = std::max(room * 0.4f, 120 * s);
  std::vector<std::string> labels{"Trace"};
  for (const ItemRef& r : path) {
    std::string_view n = tl.name_of(r);
    if (v.metrics.width(n) > cap) n = render::short_name(n);
    labels.push_back(render::elide_middle(n.substr(0, 400), cap, v.metrics));
  }
  const float arrow_w = ImGui::CalcTextSize("\xE2\x96\xB8").x, gap = arrow_w + 8 * s;
  const std::string hidden_label = "\xE2\x80\xA6";
  std::vector<float> widths;
  for (const std::string& l : labels) widths.push_back(ImGui::CalcTextSize(l.c_str()).x + pad.x * 2);
  const render::PathFit fit = render::fit_path(widths, gap, ImGui::CalcTextSize(hidden_label.c_str()).x + pad.x * 2, room);
  v.panels.crumbs_w = std::min(fit.width, room);
  if (fit.width > room && labels.size() > 1) {  // even the ends do not fit: the last gives way
    const float last_room = widths.back() - (fit.width - room) - pad.x * 2;
    labels.back() = render::elide_middle(labels.back(), std::max(last_room, 0.0f), v.metrics);
  }
  v.panels.crumbs.clear();
  ItemRef clicked;
  bool clicked_root = false;
  for (size_t i = 0; i < labels.size(); ++i) {
    const bool hidden = i >= fit.hidden_begin && i < fit.hidden_end;
    if (hidden && i != fit.hidden_begin) continue;
    if (i > 0) {
      ImGui::SameLine(0, 4 * s);
      ImGui::TextDisabled("\xE2\x96\xB8");
      ImGui::SameLine(0, 4 * s);
    }
    const std::string& label = hidden ? hidden_label : labels[i];
    v.panels.crumbs.push_back(label);
    // Drawn by hand: names may hold "##", which ImGui labels treat as an id separator.
    const bool last = i + 1 == labels.size();
    const ImVec2 ts = ImGui::CalcTextSize(label.c_str(), nullptr, false);
    const ImVec2 p = ImGui::GetCursorScreenPos();
    ImGui::PushID(int(i));
    const bool pressed = ImGui::InvisibleButton("crumb", ImVec2(ts.x + pad.x * 2, ts.y));
    const bool hov = ImGui::IsItemHovered();
    ImGui::PopID();
    const ImU32 bg = ImGui::GetColorU32(last && i > 0 ? ImGuiCol_ButtonActive : hov ? ImGuiCol_ButtonHovered : ImGuiCol_Button);
    ImGui::GetWindowDrawList()->AddRectFilled(p, ImVec2(p.x + ts.x + pad.x * 2, p.y + ts.y), bg, ImGui::GetStyle().FrameRounding);
    ImGui::GetWindowDrawList()->AddText(ImVec2(p.x + pad.x, p.y), ImGui::GetColorU32(ImGuiCol_Text), label.c_str());
    if (hidden) {
      // The hidden run: listed on hover, each one a click away.
      if (pressed) ImGui::OpenPopup("hidden_crumbs");
      if (hov) ImGui::SetTooltip("%zu more (click to list them)", fit.hidden_end - fit.hidden_begin);
      if (ImGui::BeginPopup("hidden_crumbs")) {
        for (size_t k = fit.hidden_begin; k < fit.hidden_end; ++k) {
          std::string_view n = tl.name_of(path[k - 1]);
          std::string item = render::elide_middle(n.substr(0, 400), 600 * s, v.metrics);
          ImGui::PushID(int(k));
          const float x0 = ImGui::GetCursorPosX();
          if (ImGui::Selectable("##hidden")) clicked = path[k - 1];
          ImGui::SameLine(x0);
          ImGui::TextUnformatted(item.c_str());
          ImGui::PopID();
        }
        ImGui::EndPopup();
      }
      continue;
    }
    if (i == 0) {
      clicked_root = pressed;
      continue;
    }
    if (pressed) clicked = path[i - 1];
    const std::string_view full = tl.name_of(path[i - 1]);
    if (hov && label != full) tooltip(v, "%.*s", int(std::min<size_t>(full.size(), 300)), full.data());
  }
  if (clicked_root) {
    select(v, {}, false);
    animate_to(v, v.timeline.view.limit_begin, v.timeline.view.limit_end);
  } else if (clicked.valid()) {
    focus_on(v, clicked);
  }
}

namespace {

// The GPU busy time of an item's work (core's figures, as the details panel shows them), kept
// per item: the view asks for every block of every row each frame.
Ns gpu_time_of(Viewer& v, ItemRef r) {
  const uint64_t key = uint64_t(r.kind) << 62 | uint64_t(r.tier) << 32 | r.index;
  auto [it, fresh] = v.trace->levels_gpu.emplace(key, 0);
  if (fresh) it->second = render::work_of(v.trace->timeline, r).gpu_busy;
  return it->second;
}

// A row's blocks' times. A merged block stands for a run of the unreduced children (the
// reduction partitions them in order), so its GPU time is theirs summed.
std::vector<render::LevelBlockTime> block_times(Viewer& v, const std::vector<render::Block>& blocks, ItemRef parent,
                                                bool with_gpu) {
  std::vector<render::LevelBlockTime> times(blocks.size());
  for (size_t i = 0; i < blocks.size(); ++i) times[i].wall = blocks[i].end - blocks[i].start;
  if (!with_gpu) return times;
  bool merged = false;
  for (const render::Block& b : blocks) merged |= b.merged > 1;
  const std::vector<render::Block> members = merged ? render::children_of(v.trace->timeline, parent, nullptr) : blocks;
  size_t k = 0;
  for (size_t i = 0; i < blocks.size(); ++i)
    for (uint32_t n = 0; n < blocks[i].merged && k < members.size(); ++n) times[i].gpu += gpu_time_of(v, members[k++].ref);
  return times;
}

// "1.2 ms  34%" (a share under 1% with a decimal).
std::string time_and_share(Ns t, double share) {
  return format_duration(t) + "  " + (share < 1 && share > 0 ? strprintf("%.1f%%", share) : strprintf("%d%%", int(share + 0.5)));
}

}  // namespace

void draw_levels(Viewer& v) {
  if (!v.trace) return;
  render::Timeline& tl = v.trace->timeline;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float s = v.scale;
  const float row_h = 34.0f * s, gap = 4.0f * s;
  std::vector<render::Block> blocks = render::level_roots(tl);
  if (blocks.empty()) {
    ImGui::TextDisabled("No levels: the trace has no iterations or CPU ops.");
    return;
  }
  static constexpr const char* kSizing[] = {"wall time", "GPU time"};
  const int picked = choice_row(v, "Size by:", kSizing, int(v.panels.levels_sizing), v.panels.levels_sizing_buttons);
  if (picked >= 0) v.panels.levels_sizing = render::LevelSizing(picked);
  const bool by_gpu = v.panels.levels_sizing == render::LevelSizing::Gpu;
  ImVec2 origin = ImGui::GetCursorScreenPos();
  float width = ImGui::GetContentRegionAvail().x;
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  std::string_view parent_name = "Trace";
  size_t rows = v.sel.levels_chosen.size() + 1;
  float y = origin.y;
  std::vector<float> edges;  // of the row's boxes
  ItemRef clicked;
  double clicked_t0 = 0, clicked_t1 = 0;
  for (size_t row = 0; row < rows && !blocks.empty(); ++row) {
    const ItemRef parent = row == 0 ? ItemRef{} : v.sel.levels_chosen[row - 1];
    const Ns parent_span = row == 0 ? (v.trace->model->time_end - v.trace->model->time_begin)
                                    : tl.end_of(parent) - tl.start_of(parent);
    const std::vector<render::LevelBlockTime> times = block_times(v, blocks, parent, by_gpu);
    // By GPU time a block's share is of the row's GPU time, as its width is: its siblings' GPU
    // work overlaps (compute beside communication), so shares of the parent's busy time would
    // add up past 100%.
    Ns row_gpu = 0;
    for (const render::LevelBlockTime& t : times) row_gpu += t.gpu;
    const bool gpu_row = by_gpu && row_gpu > 0;  // a row without GPU work is sized, and labelled, by wall time
    // Row title on the left.
    float title_w = 150.0f * s;
    const std::string title = render::elide_middle(parent_name.substr(0, 400), title_w - 8 * s, v.metrics);
    dl->AddText(ImVec2(origin.x, y + (row_h - ImGui::GetFontSize()) * 0.5f), IM_COL32(170, 172, 180, 255), title.c_str());
    float bx = origin.x + title_w, bw = width - title_w;
    ItemRef chosen = row < v.sel.levels_chosen.size() ? v.sel.levels_chosen[row] : ItemRef{};
    // The boxes first, untextured, then the labels of those with room for one.
    edges = render::level_block_edges(times, v.panels.levels_sizing, bx, bw);
    auto fill_of = [&](const render::Block& b) { return b.kind == SiblingBlock::Group ? render::rgba(90, 92, 100) : tl.colour_of(b.ref); };
    begin_solid(dl);
    for (size_t i = 0; i < blocks.size(); ++i) {
      const render::Block& b = blocks[i];
      float x0 = edges[i], x1 = std::max(edges[i + 1], x0 + 1);
      dl->AddRectFilled(ImVec2(x0, y), ImVec2(x1 - 1, y + row_h), ImU32(fill_of(b)));
      if (b.merged == 1 && b.ref == chosen)
        dl->AddRect(ImVec2(x0, y), ImVec2(x1 - 1, y + row_h), IM_COL32(255, 255, 255, 255), 0, 0, 2 * s);
    }
    end_solid(dl);
    for (size_t i = 0; i < blocks.size(); ++i) {
      const render::Block& b = blocks[i];
      float x0 = edges[i], x1 = std::max(edges[i + 1], x0 + 1);
      float room = x1 - x0 - 8 * s;
      bool hovered = mouse.x >= x0 && mouse.x < x1 && mouse.y >= y && mouse.y < y + row_h && ImGui::IsWindowHovered();
      if (room <= 0 && !hovered) continue;  // no label fits
      render::Rgba c = fill_of(b);
      double share = parent_span > 0 ? 100.0 * double(b.end - b.start) / double(parent_span) : 0;
      double gpu_share = row_gpu > 0 ? 100.0 * double(times[i].gpu) / double(row_gpu) : 0;
      std::string name = b.kind == SiblingBlock::Group      ? std::to_string(b.merged) + " small items"
                         : b.kind == SiblingBlock::SameName ? std::string(tl.name_of(b.ref).substr(0, 200)) + " \u00d7" + std::to_string(b.merged)
                                                            : std::string(tl.name_of(b.ref).substr(0, 200));
      std::string sub = gpu_row ? "GPU " + time_and_share(times[i].gpu, gpu_share) : time_and_share(b.end - b.start, share);
      render::Rgba tc = render::text_on(c);
      auto put = [&](const std::string& t, float ty, render::Rgba colour) {
        std::string_view tv = t;
        if (b.kind != SiblingBlock::Group && v.metrics.width(tv) > room) tv = render::short_name(tv);
        render::FittedLabel fit = render::fit_label(tv, room, v.metrics);
        if (!fit.bytes) return;
        std::string out(tv.substr(0, fit.bytes));
        if (fit.ellipsis) out += "\xE2\x80\xA6";
        dl->AddText(ImVec2(x0 + 4 * s, ty), ImU32(colour), out.c_str());
      };
      put(name, y + 2 * s, tc);
      put(sub, y + row_h * 0.5f, render::with_alpha(tc, 190));
      if (hovered) {
        begin_tooltip(v);
        ImGui::Text("%s", name.c_str());
        ImGui::Text("%s, %.1f%% of %.*s", format_duration(b.end - b.start).c_str(), share, int(parent_name.size()),
                    parent_name.data());
        if (gpu_row) ImGui::Text("GPU busy %s, %.1f%% of the row's", format_duration(times[i].gpu).c_str(), gpu_share);
        if (b.kind == SiblingBlock::Group)
          ImGui::TextDisabled("merged: each under %.0f%% of the parent (click to zoom the timeline)",
                              v.trace->annotation ? 100.0 * v.trace->annotation->reduce_options.tiny_share : 0.0);
        else if (b.kind == SiblingBlock::SameName)
          ImGui::TextDisabled("%u in a row (click to zoom the timeline)", b.merged);
        end_tooltip(v);
        if (ImGui::IsMouseClicked(ImGuiMouseButton_Left)) {
          if (b.merged > 1) clicked_t0 = double(b.start), clicked_t1 = double(b.end);
          else clicked = b.ref;
        }
      }
    }
    y += row_h + gap;
    if (row + 1 < rows) {
      ItemRef c = v.sel.levels_chosen[row];
      parent_name = tl.name_of(c);
      blocks = render::children_of(tl, c, v.trace->annotation ? &v.trace->annotation->reduce_options : nullptr);
    }
  }
  // As tall as its rows: the panel scrolls when they do not fit, to the last row when the
  // selection gives it other rows.
  ImGui::Dummy(ImVec2(width, y - origin.y));
  ImGuiStorage* st = ImGui::GetStateStorage();
  const ImGuiID rows_key = ImGui::GetID("rows");
  if (st->GetInt(rows_key, 0) != int(rows)) ImGui::SetScrollHereY(1.0f);
  st->SetInt(rows_key, int(rows));
  v.panels.levels_content_h = y - origin.y;
  v.panels.levels_visible_h = ImGui::GetWindowHeight();
  v.panels.levels_scroll_y = ImGui::GetScrollY();
  if (clicked.valid()) focus_on(v, clicked);
  else if (clicked_t1 > clicked_t0) animate_to(v, clicked_t0, clicked_t1);
}

}  // namespace strata::viewer
