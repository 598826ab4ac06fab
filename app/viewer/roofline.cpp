// The Roofline tab: the kernel classes on the device's roofline (laid out by
// render/roofline_layout), and beside it the top kernel names and layers by time with their
// achieved rates, intensity, bound and share of the roofline — the figures `strata summary`
// prints under "hardware efficiency" (core/efficiency). A point clicked lists its class's
// kernels in the table and shows its longest kernel on the timeline; a kernel row clicked
// goes to its longest kernel.
#include "app/viewer/viewer.h"

#include "core/json_writer.h"
#include "render/elide.h"
#include "render/labels.h"
#include "render/roofline_layout.h"

#include <imgui.h>

#include <algorithm>
#include <cinttypes>
#include <utility>

namespace strata::viewer {

struct RooflineView {
  render::RooflineLayout layout;
  float laid_w = -1, laid_h = -1;  // the size it was laid out for
  bool shown = false;              // the tab has been drawn (the layout dump lays it out otherwise)
  ImVec2 origin{0, 0};             // where the last frame drew its top left
  KernelClass selected = KernelClass::Count;  // the class whose kernels the table lists (Count: every class's)
  std::vector<render::KernelRow> kernels;     // the kernel table's rows
  bool rows_stale = true;
};

void RooflineViewDelete::operator()(RooflineView* r) const { delete r; }

namespace {

constexpr size_t kKernelRows = 50, kLayerRows = 100;

RooflineView& ensure_roofline(Prepared& p) {
  if (!p.roofline) p.roofline.reset(new RooflineView);
  return *p.roofline;
}

// Laid out again when the room for it changes (the window, the splitters, the scale).
void lay_out(const Viewer& v, RooflineView& r, float w, float h) {
  if (w == r.laid_w && h == r.laid_h) return;
  const float s = v.scale;
  render::RooflineStyle st;
  st.width = w, st.height = h;
  st.axis_left *= s, st.axis_top *= s, st.axis_bottom *= s, st.pad *= s;
  st.min_radius *= s, st.max_radius *= s;
  st.font = v.metrics;
  render::layout_roofline(v.trace->annotation->analyses.efficiency, st, r.layout);
  r.laid_w = w, r.laid_h = h;
}

std::string point_tip(const render::RooflinePoint& p, const EfficiencyStat& st) {
  const render::EfficiencyCells c = render::efficiency_cells(st);
  std::string tip = strprintf("%s: %s in %" PRIu64 " kernels", p.name.c_str(), c.time.c_str(), st.kernels);
  if (st.modelled < st.kernels)
    tip += strprintf(" (work known for %" PRIu64 ": %s)", st.modelled, format_duration(st.modelled_time).c_str());
  tip += "\n" + c.tflops + " TFLOP/s, " + c.tbps + " TB/s, " + c.intensity + " FLOP/B";
  tip += st.roofline_time > 0 ? "\n" + c.bound + "-bound, " + c.roof + " of the roofline" : "\nno roofline: its share is unknown";
  return tip + "\nclick: its kernels in the table, its longest on the timeline";
}

// The plot: grid, ticks, roofs, points (the selected one ringed) and labels; hovering a point
// tells its figures, a click picks its class.
void draw_plot(Viewer& v, RooflineView& r) {
  const render::RooflineLayout& l = r.layout;
  const float s = v.scale;
  const ImVec2 o = ImGui::GetCursorScreenPos();
  r.origin = o;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  auto at = [&](float x, float y) { return ImVec2(o.x + x, o.y + y); };
  const ImU32 grid = IM_COL32(60, 62, 70, 255), tick_text = IM_COL32(175, 177, 185, 255);
  dl->AddRectFilled(at(l.plot_x0, l.plot_y0), at(l.plot_x1, l.plot_y1), IM_COL32(26, 27, 31, 255));
  const float h = ImGui::GetTextLineHeight();
  for (const render::RooflineTick& t : l.x_ticks) {
    dl->AddLine(at(t.at, l.plot_y0), at(t.at, l.plot_y1), grid);
    const float w = ImGui::CalcTextSize(t.text.c_str()).x;
    dl->AddText(at(std::clamp(t.at - w / 2, 0.0f, l.width - w), l.plot_y1 + 4 * s), tick_text, t.text.c_str());
  }
  for (const render::RooflineTick& t : l.y_ticks) {
    dl->AddLine(at(l.plot_x0, t.at), at(l.plot_x1, t.at), grid);
    const float w = ImGui::CalcTextSize(t.text.c_str()).x;
    dl->AddText(at(l.plot_x0 - w - 6 * s, std::clamp(t.at - h / 2, 0.0f, l.height - h)), tick_text, t.text.c_str());
  }
  dl->AddRect(at(l.plot_x0, l.plot_y0), at(l.plot_x1, l.plot_y1), grid);
  // The higher roof first: the lower one's slope, shared up to its ridge, is drawn over it.
  for (auto f = l.roofs.rbegin(); f != l.roofs.rend(); ++f) {
    dl->AddLine(at(f->x0, f->y0), at(f->xr, f->yr), ImU32(f->colour), 2 * s);
    dl->AddLine(at(f->xr, f->yr), at(f->x1, f->yr), ImU32(f->colour), 2 * s);
  }
  for (const render::RooflinePoint& p : l.points) {
    dl->AddCircleFilled(at(p.x, p.y), p.radius, ImU32(render::with_alpha(p.colour, 210)));
    dl->AddCircle(at(p.x, p.y), p.radius, ImU32(render::darken(p.colour, 0.4f)), 0, 1.5f * s);
    if (p.cls == r.selected) dl->AddCircle(at(p.x, p.y), p.radius + 3 * s, IM_COL32(255, 255, 255, 255), 0, 2 * s);
  }
  for (const render::RooflineText& t : l.texts) dl->AddText(at(t.x, t.y), ImU32(t.colour), t.text.c_str());
  ImGui::InvisibleButton("roofline_plot", ImVec2(l.width, l.height));
  const bool clicked = ImGui::IsItemClicked();  // asked before the tooltip, which becomes the last item
  if (!ImGui::IsItemHovered()) return;
  const ImVec2 m = ImGui::GetIO().MousePos;
  const int hit = l.hit(m.x - o.x, m.y - o.y);
  if (hit < 0) return;
  const render::RooflinePoint& p = l.points[size_t(hit)];
  tooltip(v, "%s", point_tip(p, v.trace->annotation->analyses.efficiency.classes[p.stat]).c_str());
  if (clicked) {
    r.selected = r.selected == p.cls ? KernelClass::Count : p.cls;
    r.rows_stale = true;
    if (r.selected != KernelClass::Count && p.longest != kNoEvent) reveal(v, render::ItemRef::event(p.longest));
  }
}

// A figure right-aligned in its cell.
void figure(const std::string& text) {
  ImGui::SetCursorPosX(ImGui::GetCursorPosX() + ImGui::GetContentRegionAvail().x - ImGui::CalcTextSize(text.c_str()).x);
  ImGui::TextUnformatted(text.c_str());
}

// A table of groups (kernel names or layers) with their figures; `shown` the names as drawn
// (shortened), a click on row i calls `clicked(i)`.
template <class Clicked>
void stat_table(Viewer& v, const char* id, const char* what, const std::vector<const EfficiencyStat*>& rows,
                const std::vector<std::string_view>& shown, float height, Clicked clicked) {
  constexpr ImGuiTableFlags kFlags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_ScrollY |
                                     ImGuiTableFlags_Resizable | ImGuiTableFlags_SizingFixedFit;
  if (!ImGui::BeginTable(id, 7, kFlags, ImVec2(0, height))) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn(what, ImGuiTableColumnFlags_WidthStretch);
  const float s = v.scale;
  static constexpr std::pair<const char*, float> kFigures[] = {{"time", 78}, {"TFLOP/s", 62}, {"TB/s", 58},
                                                               {"FLOP/B", 58}, {"bound", 64},  {"roof", 44}};
  for (const auto& [name, w] : kFigures) ImGui::TableSetupColumn(name, 0, w * s);
  ImGui::TableHeadersRow();
  for (size_t i = 0; i < rows.size(); ++i) {
    const EfficiencyStat& st = *rows[i];
    const render::EfficiencyCells c = render::efficiency_cells(st);
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    // The name is drawn as text, not as the row's label: names hold "##" ("## forward:over_arch ##"),
    // which Dear ImGui reads as the end of a label.
    ImGui::PushID(int(i));
    if (ImGui::Selectable("##row", false, ImGuiSelectableFlags_SpanAllColumns)) clicked(i);
    if (ImGui::IsItemHovered()) tooltip(v, "%.*s", int(std::min<size_t>(st.name.size(), 400)), st.name.data());
    ImGui::PopID();
    ImGui::SameLine(0, 0);
    ImGui::TextUnformatted(render::elide_middle(shown[i], ImGui::GetContentRegionAvail().x, v.metrics).c_str());
    for (const std::string* cell : {&c.time, &c.tflops, &c.tbps, &c.intensity, &c.bound, &c.roof}) {
      ImGui::TableNextColumn();
      figure(*cell);
    }
  }
  ImGui::EndTable();
}

// The kernel names (of the picked class, or of every class) and the layers, by time.
void draw_tables(Viewer& v, RooflineView& r, float height) {
  const Efficiency& e = v.trace->annotation->analyses.efficiency;
  if (r.rows_stale) {
    r.kernels = render::kernel_rows(*v.trace->model, e, r.selected, kKernelRows);
    r.rows_stale = false;
  }
  const float line = ImGui::GetTextLineHeightWithSpacing();
  const float table_h = std::max(4 * line, (height - 2 * line) / (e.layers.empty() ? 1 : 2) - ImGui::GetStyle().ItemSpacing.y);
  std::vector<const EfficiencyStat*> rows;
  std::vector<std::string_view> full;
  for (const render::KernelRow& k : r.kernels) rows.push_back(&k.stat), full.push_back(k.stat.name);
  if (r.selected == KernelClass::Count) {
    ImGui::TextUnformatted("Top kernels by time");
  } else {
    ImGui::Text("Kernels of class %s by time", kernel_class_name(r.selected));
    ImGui::SameLine();
    if (ImGui::SmallButton("every class")) r.selected = KernelClass::Count, r.rows_stale = true;
  }
  stat_table(v, "roofline_kernels", "kernel (click: its longest on the timeline)", rows, render::distinct_short_names(full),
             table_h, [&](size_t i) {
               if (r.kernels[i].longest != kNoEvent) focus_on(v, render::ItemRef::event(r.kernels[i].longest));
             });
  if (e.layers.empty()) return;
  rows.clear();
  full.clear();
  for (size_t i = 0; i < e.layers.size() && i < kLayerRows; ++i) rows.push_back(&e.layers[i]), full.push_back(e.layers[i].name);
  ImGui::TextUnformatted("Top layers by time (forward and backward together)");
  stat_table(v, "roofline_layers", "layer", rows, full, table_h, [](size_t) {});
}

// What the figures rest on: the device's roofs, how much of the kernel time has known work.
void draw_header(const Viewer& v, const RooflineView& r) {
  const Efficiency& e = v.trace->annotation->analyses.efficiency;
  const EfficiencyStat& t = e.total;
  const render::RooflineLayout& l = r.layout;
  const std::string device = l.device.empty() ? std::string() : l.device + strprintf(", %.2f TB/s; ", l.bandwidth / 1e12);
  if (t.modelled == 0) {
    ImGui::TextDisabled("work known for none of %" PRIu64 " kernels", t.kernels);
    return;
  }
  const render::EfficiencyCells c = render::efficiency_cells(t);
  ImGui::TextDisabled("%swork known for %" PRIu64 " of %" PRIu64 " kernels (%.1f%% of kernel time): %s TFLOP/s, %s TB/s, %s of the roofline",
                      device.c_str(), t.modelled, t.kernels, t.time ? 100.0 * double(t.modelled_time) / double(t.time) : 0.0,
                      c.tflops.c_str(), c.tbps.c_str(), c.roof.c_str());
}

}  // namespace

void draw_roofline_tab(Viewer& v) {
  if (!v.trace || !v.trace->annotation) return;
  RooflineView& r = ensure_roofline(*v.trace);
  // First shown: unless its height was chosen, the bottom panel takes over half the window, as
  // a plot of several decades each way needs the room.
  if (!r.shown && v.panels.bottom_h <= 0) v.panels.bottom_h = ImGui::GetIO().DisplaySize.y * 0.55f;
  r.shown = true;
  const float s = v.scale, gap = ImGui::GetStyle().ItemSpacing.x;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float line = ImGui::GetTextLineHeightWithSpacing();
  // Wide: the plot left, the tables right; narrow: the tables under the plot.
  const bool wide = avail.x > 900 * s;
  const float plot_w = wide ? std::clamp(avail.x * 0.45f, 420 * s, 860 * s) : avail.x;
  const float body_h = std::max(avail.y - line, 12 * line);
  const float plot_h = wide ? body_h - line : std::max(240 * s, body_h * 0.6f);
  lay_out(v, r, plot_w, plot_h);
  draw_header(v, r);
  const render::RooflineLayout& l = r.layout;
  ImGui::BeginChild("roofline_plot_area", ImVec2(plot_w, wide ? body_h : plot_h + line), false, ImGuiWindowFlags_NoScrollbar);
  if (!l.empty.empty()) {
    text_wrapped(v, l.empty);
  } else {
    draw_plot(v, r);
    std::string under = l.no_roof;
    for (const std::string& u : l.unplotted) under += (under.empty() ? "not on the plot: " : "; ") + u;
    if (!under.empty()) ImGui::TextDisabled("%s", render::elide_middle(under, plot_w, v.metrics).c_str());
  }
  ImGui::EndChild();
  if (wide) ImGui::SameLine(0, gap + 8 * s);
  ImGui::BeginChild("roofline_tables", ImVec2(0, wide ? body_h : body_h - plot_h - line), false);
  draw_tables(v, r, ImGui::GetContentRegionAvail().y);
  ImGui::EndChild();
}

void write_roofline_fields(JsonWriter& j, Viewer& v) {
  if (!v.trace || !v.trace->annotation) return;
  RooflineView& r = ensure_roofline(*v.trace);
  if (!r.shown) lay_out(v, r, 640 * v.scale, 360 * v.scale);  // never drawn: laid out at the style's size
  const render::RooflineLayout& l = r.layout;
  j.field("shown", r.shown).field("empty", std::string_view(l.empty)).field("no_roof", std::string_view(l.no_roof));
  j.field("device", std::string_view(l.device)).field("bandwidth", l.bandwidth);
  j.field("x_min", l.x_min).field("x_max", l.x_max).field("y_min", l.y_min).field("y_max", l.y_max);
  write_box(j, "picture", {r.origin.x, r.origin.y, l.width, l.height});
  write_box(j, "plot", {l.plot_x0, l.plot_y0, l.plot_x1 - l.plot_x0, l.plot_y1 - l.plot_y0});
  j.key("roofs").begin_array();
  for (const render::RooflineRoof& f : l.roofs) {
    j.begin_object().field("label", f.label).field("peak", f.peak).field("ridge", f.ridge);
    j.field("x0", double(f.x0)).field("y0", double(f.y0)).field("xr", double(f.xr)).field("yr", double(f.yr)).field("x1", double(f.x1));
    j.end_object();
  }
  j.end_array();
  j.key("points").begin_array();  // x: FLOP/B, y: FLOP/s; px, py, radius: in the picture
  for (const render::RooflinePoint& p : l.points) {
    j.begin_object().field("class", p.name).field("x", p.intensity).field("y", p.flop_per_s).field("radius", double(p.radius));
    j.field("px", double(p.x)).field("py", double(p.y)).field("peak", p.peak).field("roof", p.roof);
    j.field("label_x", double(p.label_x)).field("label_y", double(p.label_y)).end_object();
  }
  j.end_array();
  j.key("texts").begin_array();
  for (const render::RooflineText& t : l.texts) {
    j.begin_object().field("text", t.text).field("x", double(t.x)).field("y", double(t.y));
    j.field("w", double(v.metrics.width(t.text))).field("h", double(v.metrics.height)).end_object();
  }
  j.end_array();
  j.key("unplotted").begin_array();
  for (const std::string& u : l.unplotted) j.value(u);
  j.end_array();
  j.field("selected", r.selected == KernelClass::Count ? "" : kernel_class_name(r.selected));
  j.field("kernel_rows", uint64_t(r.kernels.size()));
}

}  // namespace strata::viewer
