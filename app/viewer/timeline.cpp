// The timeline panel: ruler, gutter with lane titles, the laid-out items, flow arrows, and
// the input on them (wheel zoom at the cursor, drag to pan, WASD, F, double-click, Esc).
#include "app/viewer/viewer.h"

#include <imgui.h>

#include <GLFW/glfw3.h>

#include <algorithm>
#include <cmath>

namespace strata::viewer {

using render::ItemRef;

std::string fmt_time(const Viewer& v, double ns) {
  double origin = time_origin(v);
  return format_duration(ns - origin);
}

void update_metrics(Viewer& v) {
  ImFont* f = v.font ? v.font : ImGui::GetFont();
  if (!f) return;
  for (int c = 0; c < 128; ++c) v.metrics.advance[c] = c >= 32 ? f->GetCharAdvance(ImWchar(c)) : 0.0f;
  v.metrics.other = f->GetCharAdvance(ImWchar(0xE9));
  v.metrics.ellipsis = f->CalcTextSizeA(f->FontSize, 1e9f, 0, "\xE2\x80\xA6").x;
  v.metrics.height = f->FontSize;
}

namespace {

void remember_place(Viewer& v, render::ItemRef selected) {
  std::vector<Place>& h = v.timeline.history;
  if (h.size() >= TimelineState::kMaxHistory) h.erase(h.begin());
  h.push_back({v.timeline.view.t0, v.timeline.view.t1(), selected});
}

void move_to(Viewer& v, double t0, double t1) {
  if (v.capture.headless) {
    v.timeline.view.fit(t0, t1, 0.03f);
    return;
  }
  v.timeline.animating = true;
  v.timeline.anim_t0 = t0;
  v.timeline.anim_t1 = t1;
}

}  // namespace

void animate_to(Viewer& v, double t0, double t1) {
  remember_place(v, v.sel.hl.selected);
  move_to(v, t0, t1);
}

bool go_back(Viewer& v) {
  if (v.timeline.history.empty()) return false;
  const Place p = v.timeline.history.back();
  v.timeline.history.pop_back();
  v.timeline.animating = false;
  v.timeline.view.fit(p.t0, p.t1, 0);
  if (p.selected != v.sel.hl.selected) select(v, p.selected, false);
  return true;
}

void select(Viewer& v, ItemRef r, bool fit) {
  if (!v.trace) return;
  render::Timeline& tl = v.trace->timeline;
  const ItemRef before = v.sel.hl.selected;
  v.sel.memory_picked = false;
  v.sel.memory = {};
  v.sel.work = r.valid() ? render::work_of(tl, r) : WorkFigures{};
  render::related_of(tl, r, v.sel.work.gpu_ops, v.sel.hl, &v.sel.flows);
  v.sel.path = render::focus_path(tl, r);
  // The levels view follows the selection's path.
  v.sel.levels_chosen = v.sel.path;
  if (fit && r.valid()) {  // back returns to the earlier view with the earlier selection
    remember_place(v, before);
    move_to(v, double(tl.start_of(r)), double(tl.end_of(r)));
  }
  // Bring the item's row into view.
  if (r.valid()) {
    bool pinned = false;
    const float y = tl.row_y(r, v.timeline.rows, v.timeline.scroll_y, &pinned);
    if (!pinned) scroll_to_row(v, y);
  }
}

void scroll_to_row(Viewer& v, float y) {
  const render::Timeline& tl = v.trace->timeline;
  const float top = tl.pinned_height(v.timeline.rows);
  if (v.timeline.height > 0 && y >= 0 && (y < top || y > v.timeline.height - tl.style.row_h))
    v.timeline.scroll_y = std::max(0.0f, v.timeline.scroll_y + y - (top + (v.timeline.height - top) * 0.4f));
}

void focus_on(Viewer& v, ItemRef r) { select(v, r, true); }

void select_parent(Viewer& v) {
  if (v.sel.path.size() < 2) return;
  remember_place(v, v.sel.hl.selected);  // back comes down again, one step
  select(v, v.sel.path[v.sel.path.size() - 2], false);
}

namespace {

ImU32 col(render::Rgba c) { return ImU32(c); }

void step_animation(Viewer& v) {
  if (!v.timeline.animating) return;
  double t0 = v.timeline.view.t0, t1 = v.timeline.view.t1();
  double m = (v.timeline.anim_t1 - v.timeline.anim_t0) * 0.03;
  double goal0 = v.timeline.anim_t0 - m, goal1 = v.timeline.anim_t1 + m;
  float dt = ImGui::GetIO().DeltaTime;
  double k = 1.0 - std::exp(-double(dt) * 14.0);
  // Interpolate in log space for the span so zooms feel even.
  double span = t1 - t0, goal_span = goal1 - goal0;
  double ns = std::exp(std::log(span) + (std::log(goal_span) - std::log(span)) * k);
  double c = (t0 + t1) * 0.5, gc = (goal0 + goal1) * 0.5;
  double nc = c + (gc - c) * k;
  v.timeline.view.fit(nc - ns * 0.5, nc + ns * 0.5, 0);
  if (std::abs(ns - goal_span) < goal_span * 0.002 && std::abs(nc - gc) < goal_span * 0.002) {
    v.timeline.view.fit(goal0, goal1, 0);
    v.timeline.animating = false;
  }
}

void draw_arrow(ImDrawList* dl, ImVec2 a, ImVec2 b, ImU32 c, float s) {
  float dx = std::max(std::abs(b.x - a.x) * 0.5f, 20.0f * s);
  dl->AddBezierCubic(a, ImVec2(a.x + dx * 0.3f, a.y + (b.y - a.y) * 0.5f), ImVec2(b.x - dx * 0.3f, b.y - (b.y - a.y) * 0.5f),
                     b, c, 1.5f * s);
  float dir = b.y > a.y ? 1.0f : -1.0f;
  float h = 6.0f * s;
  dl->AddTriangleFilled(b, ImVec2(b.x - h * 0.6f, b.y - dir * h), ImVec2(b.x + h * 0.6f, b.y - dir * h), c);
}

void draw_tooltip(Viewer& v, ItemRef r, uint32_t fold) {
  render::Timeline& tl = v.trace->timeline;
  const TraceModel& m = *v.trace->model;
  begin_tooltip(v);
  if (fold > 1) {
    ImGui::Text("%u items folded (zoom in or click to expand)", fold);
    ImGui::TextDisabled("first: %.*s", int(std::min<size_t>(tl.name_of(r).size(), 200)), tl.name_of(r).data());
  } else {
    std::string_view n = tl.name_of(r);
    ImGui::TextUnformatted(n.data(), n.data() + std::min<size_t>(n.size(), 400));
    ImGui::Separator();
    ImGui::Text("Duration  %s", format_duration(tl.end_of(r) - tl.start_of(r)).c_str());
    ImGui::Text("Start     %s", fmt_time(v, double(tl.start_of(r))).c_str());
    if (r.kind == ItemRef::Event) {
      ImGui::Text("Category  %s", m.category_names[m.ev.cat[r.index]].c_str());
      const bool gpu = is_gpu_cat(m.ev.category(r.index));
      EventId l = gpu ? m.host_side_of(r.index) : m.gpu_op_of(r.index);
      if (l != kNoEvent) {
        std::string_view ln = m.name_of(l);
        ImGui::TextDisabled("%s %.*s", gpu ? "launched by" : "runs", int(std::min<size_t>(ln.size(), 120)), ln.data());
      }
    }
  }
  end_tooltip(v);
}

}  // namespace

void draw_timeline(Viewer& v, float x, float y, float w, float h) {
  if (!v.trace) return;
  render::Timeline& tl = v.trace->timeline;
  ImGuiIO& io = ImGui::GetIO();
  const float s = v.scale;
  const float gutter = gutter_width(v, w);
  const float ruler_h = 26.0f * s;
  const float area_x = x + gutter, area_w = std::max(1.0f, w - gutter);
  const float rows_y = y + ruler_h, rows_h = std::max(1.0f, h - ruler_h);
  v.timeline.height = rows_h;
  v.timeline.view.set_width(area_w);
  step_animation(v);

  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 mouse = io.MousePos;
  const bool in_area = mouse.x >= area_x && mouse.x < area_x + area_w && mouse.y >= rows_y && mouse.y < rows_y + rows_h;
  const bool in_ruler = mouse.x >= area_x && mouse.x < area_x + area_w && mouse.y >= y && mouse.y < rows_y;
  // Headless renders (screenshots, benchmarks) ignore wherever the pointer happens to be,
  // unless --keys put it somewhere.
  const bool hovered_window = (!v.capture.headless || v.capture.pointer) && ImGui::IsWindowHovered(ImGuiHoveredFlags_AllowWhenBlockedByActiveItem);

  // Input: wheel zooms at the cursor; shift+wheel scrolls; horizontal wheel pans.
  float content_h = tl.content_height(v.timeline.rows);
  const bool measuring = handle_range_input(v, area_x, in_area, in_ruler, hovered_window);
  if (hovered_window && (in_area || in_ruler) && !measuring) {
    if (io.MouseWheel != 0) {
      v.timeline.animating = false;
      if (io.KeyShift) v.timeline.scroll_y -= io.MouseWheel * 60.0f * s;
      else v.timeline.view.zoom_at(mouse.x - area_x, std::pow(1.25, double(io.MouseWheel)));
    }
    if (io.MouseWheelH != 0) v.timeline.view.pan_px(io.MouseWheelH * 60.0f * s);
    if (ImGui::IsMouseClicked(ImGuiMouseButton_Left) || ImGui::IsMouseClicked(ImGuiMouseButton_Right) ||
        ImGui::IsMouseClicked(ImGuiMouseButton_Middle)) {
      v.timeline.dragging = true;
      v.timeline.drag_total = 0;
    }
  }
  if (v.timeline.dragging && !measuring) {
    if (ImGui::IsMouseDown(ImGuiMouseButton_Left) || ImGui::IsMouseDown(ImGuiMouseButton_Right) ||
        ImGui::IsMouseDown(ImGuiMouseButton_Middle)) {
      ImVec2 d = io.MouseDelta;
      v.timeline.drag_total += std::abs(d.x) + std::abs(d.y);
      if (v.timeline.drag_total > 3.0f) {
        v.timeline.animating = false;
        v.timeline.view.pan_px(d.x);
        v.timeline.scroll_y -= d.y;
      }
    } else {
      v.timeline.dragging = false;
    }
  }
  handle_keys(v, mouse.x - area_x, in_area);
  v.timeline.scroll_y = std::clamp(v.timeline.scroll_y, 0.0f, std::max(0.0f, content_h - rows_h * 0.5f));

  // Layout (timed: the frame benchmark reports it).
  {
    PartTimer part(v.capture.parts, "layout");
    v.sel.hl.matches = v.search.matches.empty() ? nullptr : &v.search.matches;
    tl.layout(v.timeline.view, v.timeline.scroll_y, rows_h, v.metrics, v.sel.hl, v.timeline.rows, v.timeline.frame);
    v.timeline.layout_ms = part.elapsed_ms();
  }

  const render::FrameLayout& fl = v.timeline.frame;
  // Backgrounds: the gutter, lanes, section bands.
  dl->PushClipRect(ImVec2(x, y), ImVec2(x + w, y + h), true);
  begin_solid(dl);  // up to the labels: boxes and lines only
  dl->AddRectFilled(ImVec2(x, rows_y), ImVec2(area_x, y + h), IM_COL32(38, 39, 43, 255));
  for (const render::GutterLabel& g : fl.gutter) {
    float gy0 = rows_y + g.y0, gy1 = rows_y + g.y1;
    if (g.section) {
      dl->AddRectFilled(ImVec2(x, gy0), ImVec2(x + w, gy1), IM_COL32(52, 55, 62, 255));
      dl->AddLine(ImVec2(x, gy0), ImVec2(x + w, gy0), IM_COL32(80, 84, 92, 255));
    } else if (g.index % 2 == 0) {
      dl->AddRectFilled(ImVec2(area_x, gy0), ImVec2(x + w, gy1), IM_COL32(34, 35, 39, 255));
    }
  }
  // Grid lines at the ruler's majors.
  render::Ruler ruler = render::make_ruler(v.timeline.view, time_origin(v), 110.0f * s);
  for (const render::Tick& t : ruler.ticks)
    if (t.major) dl->AddLine(ImVec2(area_x + t.x, rows_y), ImVec2(area_x + t.x, y + h), IM_COL32(255, 255, 255, 14));

  // Items.
  dl->PushClipRect(ImVec2(area_x, rows_y), ImVec2(x + w, y + h), true);
  for (const render::DrawRect& c : fl.counter_rects)
    dl->AddRectFilled(ImVec2(area_x + c.x0, rows_y + c.y0), ImVec2(area_x + c.x1, rows_y + c.y1), col(c.fill));
  const bool dim_mode = v.sel.hl.selected.valid() || !v.search.matches.empty();
  for (const render::DrawRect& r : fl.rects) {
    ImVec2 a(area_x + r.x0, rows_y + r.y0), b(area_x + r.x1, rows_y + r.y1);
    render::Rgba fill = r.fill;
    if (dim_mode && !v.search.matches.empty() && !(r.flags & (render::kMatch | render::kSelected | render::kRelated)))
      fill = render::with_alpha(render::darken(fill, 0.5f), 255);
    dl->AddRectFilled(a, b, col(fill));
    if (r.flags & render::kFolded) {
      // Folded runs: a lighter top edge marks "more inside".
      dl->AddLine(ImVec2(a.x, a.y + 0.5f), ImVec2(b.x, a.y + 0.5f), IM_COL32(255, 255, 255, 60));
    }
  }
  end_solid(dl);
  for (const render::DrawText& t : fl.texts) {
    const char* p = fl.text.data() + t.offset;
    dl->AddText(v.font, v.font->FontSize, ImVec2(area_x + t.x, rows_y + t.y), col(t.colour), p, p + t.len);
    if (t.ellipsis)
      dl->AddText(v.font, v.font->FontSize, ImVec2(area_x + t.x + t.text_w, rows_y + t.y), col(t.colour),
                  "\xE2\x80\xA6");
  }
  // Outlines last so they sit on top of labels.
  begin_solid(dl);
  for (const render::DrawRect& r : fl.rects) {
    if (!(r.flags & (render::kSelected | render::kRelated | render::kMatch))) continue;
    ImVec2 a(area_x + r.x0, rows_y + r.y0), b(area_x + r.x1, rows_y + r.y1);
    if (r.flags & render::kSelected) dl->AddRect(ImVec2(a.x - 1, a.y - 1), ImVec2(b.x + 1, b.y + 1), IM_COL32(255, 255, 255, 255), 0, 0, 2.0f * s);
    else if (r.flags & render::kRelated) dl->AddRect(a, b, IM_COL32(240, 228, 66, 255), 0, 0, 1.5f * s);
    else dl->AddRect(a, b, IM_COL32(255, 170, 60, 255), 0, 0, 1.5f * s);
  }
  // Flow arrows: launch → GPU op.
  size_t drawn = 0;
  for (auto [from, to] : v.sel.flows) {
    if (drawn >= 64) break;
    float ya = tl.row_y(ItemRef::event(from), v.timeline.rows, v.timeline.scroll_y),
          yb = tl.row_y(ItemRef::event(to), v.timeline.rows, v.timeline.scroll_y);
    if (ya < 0 || yb < 0) continue;
    const TraceModel& m = *v.trace->model;
    ImVec2 a(area_x + v.timeline.view.x_of(double(m.ev.start[from])), rows_y + ya);
    ImVec2 b(area_x + v.timeline.view.x_of(double(m.ev.start[to])), rows_y + yb - tl.style.row_h * 0.5f * (yb > ya ? 1.f : -1.f));
    if (std::max(a.x, b.x) < area_x || std::min(a.x, b.x) > x + w) continue;
    draw_arrow(dl, a, b, IM_COL32(240, 228, 66, 220), s);
    ++drawn;
  }
  end_solid(dl);
  dl->PopClipRect();

  // Gutter labels.
  for (const render::GutterLabel& g : fl.gutter) {
    float gy0 = rows_y + g.y0;
    if (gy0 + 2 < rows_y && g.y1 + rows_y < rows_y) continue;
    const char* title;
    std::string buf;
    if (g.section) {
      title = tl.sections[g.index].title.c_str();
      buf = std::string(g.collapsed ? "\xE2\x96\xB6 " : "\xE2\x96\xBC ") + title;
      dl->PushClipRect(ImVec2(x, rows_y), ImVec2(x + w, y + h), true);
      dl->AddText(v.font_bold, v.font_bold->FontSize, ImVec2(x + 6 * s, gy0 + (tl.style.section_h - v.font_bold->FontSize) * 0.5f),
                  IM_COL32(235, 235, 240, 255), buf.c_str());
      dl->PopClipRect();
    } else {
      const render::Lane& lane = tl.lanes[g.index];
      buf = g.expandable ? std::string(g.collapsed ? "\xE2\x96\xB8 " : "\xE2\x96\xBE ") + lane.title : "   " + lane.title;
      if (v.timeline.rows.lane_is_pinned(g.index)) buf += "  \xE2\x96\xAA";  // a small square: pinned
      // Within its lane's visible band: a lane scrolling away under the pinned rows takes its title along.
      dl->PushClipRect(ImVec2(x, std::max(rows_y, gy0)), ImVec2(area_x - 4 * s, std::min(y + h, rows_y + g.y1)), true);
      dl->AddText(v.font, v.font->FontSize, ImVec2(x + 14 * s, gy0 + (tl.style.row_h - v.font->FontSize) * 0.5f),
                  IM_COL32(200, 202, 210, 255), buf.c_str());
      if (lane.kind == render::LaneKind::Counter) {
        const render::CounterTrack& c = tl.counters[lane.index];
        std::string peak = "peak " + (c.bytes ? format_bytes(c.max_value) : strprintf("%g", c.max_value));
        dl->AddText(v.font, v.font->FontSize, ImVec2(x + 26 * s, gy0 + tl.style.row_h), IM_COL32(150, 152, 160, 255), peak.c_str());
      }
      dl->PopClipRect();
    }
  }
  dl->AddLine(ImVec2(area_x, rows_y), ImVec2(area_x, y + h), IM_COL32(70, 72, 80, 255));
  if (fl.pinned_h > 0)  // where the pinned rows end and the scrolled ones begin
    dl->AddLine(ImVec2(x, rows_y + fl.pinned_h - 1), ImVec2(x + w, rows_y + fl.pinned_h - 1), IM_COL32(120, 124, 135, 255), 2 * s);

  // Ruler.
  dl->AddRectFilled(ImVec2(x, y), ImVec2(x + w, rows_y), IM_COL32(44, 46, 52, 255));
  dl->AddLine(ImVec2(x, rows_y), ImVec2(x + w, rows_y), IM_COL32(80, 84, 92, 255));
  dl->PushClipRect(ImVec2(area_x, y), ImVec2(x + w, rows_y), true);
  for (const render::Tick& t : ruler.ticks) {
    float tx = area_x + t.x;
    dl->AddLine(ImVec2(tx, rows_y - (t.major ? 10 : 5) * s), ImVec2(tx, rows_y), IM_COL32(170, 172, 180, 255));
    if (t.major) dl->AddText(ImVec2(tx + 3 * s, y + 3 * s), IM_COL32(210, 212, 220, 255), t.label.c_str());
  }
  dl->PopClipRect();
  {
    std::string span = ruler.base_label.empty() ? "view " + format_duration(v.timeline.view.span()) : ruler.base_label + " +";
    dl->AddText(ImVec2(x + 6 * s, y + 5 * s), IM_COL32(150, 152, 160, 255), span.c_str());
  }

  draw_range_overlay(v, area_x, area_w, y, rows_y, y + h);
  // Hover: cursor line, tooltip; click selects, double-click zooms, click on a fold expands.
  v.timeline.hovered = {};
  v.timeline.hovered_fold = 0;
  const bool clicked = hovered_window && in_area && !measuring && ImGui::IsMouseReleased(ImGuiMouseButton_Left) && v.timeline.drag_total <= 3.0f;
  const bool lane_took_click = draw_counter_lanes(v, area_x, rows_y, area_w, hovered_window && in_area && !v.timeline.dragging, clicked);
  if (hovered_window && in_area && !v.timeline.dragging) {
    v.timeline.hovered = tl.hit(fl, mouse.x - area_x, mouse.y - rows_y, &v.timeline.hovered_fold);
    dl->AddLine(ImVec2(mouse.x, y), ImVec2(mouse.x, y + h), IM_COL32(255, 255, 255, 50));
    if (v.timeline.hovered.valid()) draw_tooltip(v, v.timeline.hovered, v.timeline.hovered_fold);
  }
  if (clicked && !lane_took_click) {
    clear_range(v);
    ItemRef r = tl.hit(fl, mouse.x - area_x, mouse.y - rows_y, &v.timeline.hovered_fold);
    if (r.valid() && v.timeline.hovered_fold > 1) {
      // Expand a fold: zoom to the run it stands for.
      const auto* row = &fl.rows[0];
      for (const auto& rr : fl.rows)
        if (mouse.y - rows_y >= rr.y0 && mouse.y - rows_y < rr.y1) row = &rr;
      int k = render::hit_test(fl.items.data() + row->item_begin, row->item_end - row->item_begin, mouse.x - area_x);
      if (k >= 0) {
        const render::LayoutItem& it = fl.items[row->item_begin + uint32_t(k)];
        animate_to(v, v.timeline.view.t_of(it.x0), v.timeline.view.t_of(it.x1));
      }
    } else {
      select(v, r, false);
    }
  }
  if (hovered_window && in_area && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) {
    ItemRef r = tl.hit(fl, mouse.x - area_x, mouse.y - rows_y);
    if (r.valid()) focus_on(v, r);
  }
  // Gutter clicks collapse sections and lanes; a right click on a lane pins it to the top.
  static uint32_t menu_lane = UINT32_MAX;
  if (hovered_window && (ImGui::IsMouseClicked(ImGuiMouseButton_Left) || ImGui::IsMouseClicked(ImGuiMouseButton_Right)) &&
      mouse.x >= x && mouse.x < area_x && mouse.y >= rows_y) {
    const bool right = ImGui::IsMouseClicked(ImGuiMouseButton_Right);
    for (const render::GutterLabel& g : fl.gutter) {
      float gy0 = rows_y + g.y0;
      float gy1 = g.section ? rows_y + g.y1 : gy0 + tl.style.row_h;
      if (mouse.y < gy0 || mouse.y >= gy1) continue;
      if (right && !g.section) {
        menu_lane = g.index;
        ImGui::OpenPopup("lane_menu");
      } else if (!right && g.section) {
        v.timeline.rows.toggle_section(tl, g.index);
      } else if (!right && g.expandable) {
        v.timeline.rows.toggle_lane(tl, g.index);
      }
      break;
    }
  }
  if (ImGui::BeginPopup("lane_menu")) {
    if (menu_lane < tl.lanes.size()) {
      ImGui::TextDisabled("%s", tl.lanes[menu_lane].title.c_str());
      if (ImGui::MenuItem(v.timeline.rows.lane_is_pinned(menu_lane) ? "Unpin" : "Pin to the top"))
        v.timeline.rows.toggle_pin(tl, menu_lane);
      if (tl.lanes[menu_lane].levels > 1 && ImGui::MenuItem(v.timeline.rows.lane_collapsed(menu_lane) ? "Expand" : "Collapse to one row"))
        v.timeline.rows.toggle_lane(tl, menu_lane);
    }
    ImGui::EndPopup();
  }
  if (hovered_window && in_area && mouse.x >= area_x) {
    // Time under the cursor, on the ruler.
    std::string t = fmt_time(v, v.timeline.view.t_of(mouse.x - area_x));
    ImVec2 ts = ImGui::CalcTextSize(t.c_str());
    float tx = std::min(mouse.x + 4 * s, x + w - ts.x - 4 * s);
    dl->AddRectFilled(ImVec2(tx - 2 * s, y + 2 * s), ImVec2(tx + ts.x + 2 * s, y + 2 * s + ts.y), IM_COL32(20, 20, 24, 230));
    dl->AddText(ImVec2(tx, y + 2 * s), IM_COL32(255, 255, 255, 255), t.c_str());
  }
  // Vertical scrollbar (thin) when rows overflow.
  if (content_h > rows_h) {
    float frac = rows_h / content_h, top = v.timeline.scroll_y / content_h;
    float bx = x + w - 6 * s;
    dl->AddRectFilled(ImVec2(bx, rows_y + top * rows_h), ImVec2(bx + 4 * s, rows_y + (top + frac) * rows_h),
                      IM_COL32(255, 255, 255, 60), 2 * s);
  }
  dl->PopClipRect();
}

}  // namespace strata::viewer
