// File ▸ Compare… and the Compare tab: a second run (B) read, annotated and compared with the
// open trace (A) by core/diff on the loading worker (a load's progress and cancel), then shown:
// the changes in words, the two runs' median iterations one above the other on one time scale
// (laid out by render/compare_layout), and the layers and phases in tables. A layer picked in
// the table is outlined in both runs; a bar clicked in the picture picks its row in the table.
#include "app/viewer/viewer.h"

#include "core/diff/diff.h"
#include "core/json_writer.h"
#include "render/compare_layout.h"
#include "render/elide.h"
#include "render/search.h"

#include <imgui.h>

#include <algorithm>
#include <filesystem>
#include <limits>

namespace strata::viewer {

struct Comparison {
  Diff diff;
  AnnotationTree tree_b;  // all the picture needs of B: its model and the rest of its annotation are let go
  NodeId iteration_a = kNoNode, iteration_b = kNoNode;  // the iterations drawn: the diff's shown ones
  // The UI's.
  int64_t selected = -1;   // into diff.layers: outlined in the picture, highlighted in the table
  bool reveal = false;     // scroll the layer table to the selected row
  char filter[128] = {};
  std::vector<size_t> rows;  // the layer rows the table shows, filtered and sorted
  std::string rows_filter;   // the filter `rows` was made with
  bool sort_again = true;
  render::CompareLayout layout;  // laid out again when its width or the selection changes
  float laid_width = -1;
  int64_t laid_selected = -2;
};

void ComparisonDelete::operator()(Comparison* c) const { delete c; }

namespace {

// The layer table's columns, in order.
enum Column : int { kRank, kPath, kA, kB, kChange, kSelf, kColumns };

NodeId iteration_node(const Annotation& a, int64_t shown) {
  return shown >= 0 && size_t(shown) < a.iterations.size() ? a.iterations[size_t(shown)].node : kNoNode;
}

// On the worker: B read and annotated, then compared with A (kept open until the job ends: a
// trace going away cancels the job that reads it first).
void compare_worker(LoadJob& j, const Prepared& a) {
  const std::string cancelled = "Comparing with " + j.path + " was cancelled";
  LoadResult r = load_trace(j.path, &j.progress);
  if (!r.model || j.progress.cancelled()) {
    j.error = j.progress.cancelled() ? cancelled : "Cannot compare: " + r.error();
    return;
  }
  Annotation b = annotate(*r.model, j.options, &j.progress);
  if (!b.status.is_ok() || j.progress.cancelled()) {
    j.error = cancelled;
    return;
  }
  std::unique_ptr<Comparison, ComparisonDelete> c(new Comparison);
  c->diff = diff_runs(*a.model, *a.annotation, *r.model, b);
  c->iteration_a = iteration_node(*a.annotation, c->diff.shown_a);
  c->iteration_b = iteration_node(b, c->diff.shown_b);
  c->tree_b = std::move(b.tree);
  if (!c->diff.layers.empty()) c->selected = 0;  // the largest change, outlined from the start
  j.comparison = std::move(c);
}

std::string file_name(const std::string& path) { return std::filesystem::path(path).filename().string(); }
std::string change_text(Ns d) { return (d > 0 ? "+" : "") + format_duration(d); }
std::string time_text(const std::optional<Ns>& t) { return t ? format_duration(*t) : "\xE2\x80\x94"; }  // an em dash: absent

// A layer row's path: the same on both sides, one side's, or "A's ~ B's".
std::string row_path(const DiffRow& r) {
  if (r.name_a.empty()) return r.name_b;
  if (r.name_b.empty() || r.name_b == r.name_a) return r.name_a;
  return r.name_a + " ~ " + r.name_b;
}

// The colour of a layer's self change: as its change's, from the self times.
render::Rgba self_colour(const DiffRow& r) {
  DiffRow self;
  if (r.a) self.a = r.self_a.value_or(*r.a);
  if (r.b) self.b = r.self_b.value_or(*r.b);
  return render::change_colour(self);
}

ImVec4 colour_vec(render::Rgba c) { return ImGui::ColorConvertU32ToFloat4(ImU32(c)); }

// A figure right-aligned in its table cell, in `colour` when given (0: the text's).
void figure(const std::string& text, render::Rgba colour = 0) {
  ImGui::SetCursorPosX(ImGui::GetCursorPosX() + std::max(0.0f, ImGui::GetContentRegionAvail().x - ImGui::CalcTextSize(text.c_str()).x));
  if (colour) ImGui::TextColored(colour_vec(colour), "%s", text.c_str());
  else ImGui::TextUnformatted(text.c_str());
}

// A row's A, B and change columns.
void time_cells(const DiffRow& r) {
  ImGui::TableNextColumn();
  figure(time_text(r.a));
  ImGui::TableNextColumn();
  figure(time_text(r.b));
  ImGui::TableNextColumn();
  figure(change_text(r.delta()), render::change_colour(r));
}

const DiffRow* phase_row(const Diff& d, std::string_view name) {
  for (const DiffRow& r : d.phases)
    if (r.name_a == name || r.name_b == name) return &r;
  return nullptr;
}

// Which runs and iterations, the changes in words, the notes, the alignment, the colours.
void draw_header(Viewer& v, const Comparison& c) {
  const Diff& d = c.diff;
  const float s = v.scale;
  auto run = [&](const char* side, const std::string& file, int64_t shown, size_t iterations, Ns span) {
    ImGui::PushFont(v.font_bold);
    ImGui::TextUnformatted(side);
    ImGui::PopFont();
    ImGui::SameLine();
    ImGui::TextUnformatted(file_name(file).c_str());
    if (ImGui::IsItemHovered()) tooltip(v, "%s", file.c_str());
    ImGui::SameLine();
    if (shown >= 0) ImGui::TextDisabled("iteration %lld of %zu: %s", (long long)shown + 1, iterations, format_duration(span).c_str());
    else ImGui::TextDisabled("no complete iteration: the whole trace");
  };
  run("A", d.file_a, d.shown_a, d.iterations_a, c.layout.span_a);
  ImGui::SameLine(0, 32 * s);
  run("B", d.file_b, d.shown_b, d.iterations_b, c.layout.span_b);
  const char* close = "Close comparison";
  ImGui::SameLine(std::max(ImGui::GetCursorPosX(), ImGui::GetWindowContentRegionMax().x - ImGui::CalcTextSize(close).x - 8 * s));
  if (ImGui::SmallButton(close)) {
    close_comparison(v);
    return;
  }
  for (const std::string& e : d.explain) {
    ImGui::Bullet();
    text_wrapped(v, e);
  }
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  for (const std::string& n : d.notes) text_wrapped(v, n);
  ImGui::PopStyleColor();
  const size_t larger = std::max(d.layers_a, d.layers_b);
  ImGui::Text("%zu of %zu layers aligned (%.0f%%);", d.layers_aligned, larger, 100.0 * d.aligned_share);
  ImGui::SameLine();
  ImGui::TextUnformatted(d.time_basis == "gpu" ? "times per iteration, in GPU time (both ran on a GPU)"
                                               : "times per iteration, in wall time (a run without GPU work): a layer's "
                                                 "time runs from the end of what ran before it (drawn darker)");
  // The colours' legend: on the same line where it fits, else on its own.
  const std::vector<render::LegendEntry> legend = render::change_legend();
  const float gap = 24 * s, chip_w = 1.6f * ImGui::GetTextLineHeight() + ImGui::GetStyle().ItemSpacing.x;
  float legend_w = 0;
  for (const render::LegendEntry& e : legend) legend_w += gap + chip_w + ImGui::CalcTextSize(e.what.c_str()).x;
  ImGui::SameLine();
  const bool fits = ImGui::GetContentRegionAvail().x >= legend_w;
  if (!fits) ImGui::NewLine();
  for (size_t i = 0; i < legend.size(); ++i) {
    if (fits || i > 0) ImGui::SameLine(0, gap);
    colour_chip(v, legend[i].colour, legend[i].what);
  }
}

// The picture laid out for `width`, again only when the width or the selection changed.
void lay_out(Viewer& v, Comparison& c, float width) {
  if (c.laid_width == width && c.laid_selected == c.selected) return;
  const float s = v.scale;
  render::CompareInput in;
  in.diff = &c.diff;
  in.tree_a = &v.trace->annotation->tree;
  in.tree_b = &c.tree_b;
  in.iteration_a = c.iteration_a;
  in.iteration_b = c.iteration_b;
  in.selected_row = c.selected;
  render::CompareStyle st;
  st.row_h = ImGui::GetTextLineHeight() + 4 * s;
  st.bar_gap = 2 * s;
  st.outline = 2 * s;
  st.axis_h = ImGui::GetTextLineHeight() + 4 * s;
  st.label_w = 80 * s;
  st.block_gap = 10 * s;
  st.width = std::max(100 * s, width - st.label_w - 8 * s);
  st.font = v.metrics;
  render::layout_compare(in, st, c.layout);
  c.laid_width = width;
  c.laid_selected = c.selected;
}

// What the hovered bar is: its path, its time in this iteration, and its row's figures.
void bar_tooltip(Viewer& v, const Comparison& c, const AnnotationTree& t, const render::CompareItem& it) {
  const DiffRow* r = it.row >= 0 ? &c.diff.layers[size_t(it.row)] : phase_row(c.diff, t.name_of(it.node));
  begin_tooltip(v);
  ImGui::Text("%s: %s", it.b ? "B" : "A", (r && it.row >= 0 ? row_path(*r) : path_in_iteration(t, it.node)).c_str());
  if (it.lead_in > 0)
    ImGui::TextDisabled("%s in this iteration: %s before its start (since what ran before it ended, darker), %s from its start",
                        format_duration(it.lead_in + t.duration(it.node)).c_str(), format_duration(it.lead_in).c_str(),
                        format_duration(t.duration(it.node)).c_str());
  else
    ImGui::TextDisabled("%s in this iteration", format_duration(t.duration(it.node)).c_str());
  if (r) {
    ImGui::Text("per iteration: A %s, B %s, change ", time_text(r->a).c_str(), time_text(r->b).c_str());
    ImGui::SameLine(0, 0);
    ImGui::TextColored(colour_vec(render::change_colour(*r)), "%s", change_text(r->delta()).c_str());
    if (it.row >= 0) ImGui::Text("self change %s", change_text(r->self_delta()).c_str());
    if (!r->detail.empty()) ImGui::TextDisabled("%s", r->detail.c_str());
  }
  end_tooltip(v);
}

// The two iterations, A above B; a click on a layer picks its row.
void draw_picture(Viewer& v, Comparison& c) {
  const render::CompareLayout& lay = c.layout;
  const ImVec2 o = ImGui::GetCursorScreenPos();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  begin_solid(dl);
  for (const render::DrawRect& r : lay.rects) dl->AddRectFilled(ImVec2(o.x + r.x0, o.y + r.y0), ImVec2(o.x + r.x1, o.y + r.y1), ImU32(r.fill));
  end_solid(dl);
  for (const render::CompareText& t : lay.texts)
    dl->AddText(t.title ? v.font_bold : ImGui::GetFont(), ImGui::GetFontSize(), ImVec2(o.x + t.x, o.y + t.y), ImU32(t.colour), t.text.c_str());
  ImGui::Dummy(ImVec2(lay.width, lay.height));
  if (!ImGui::IsItemHovered()) return;
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const render::CompareItem* it = lay.hit(mouse.x - o.x, mouse.y - o.y);
  if (!it) return;
  bar_tooltip(v, c, it->b ? c.tree_b : v.trace->annotation->tree, *it);
  if (it->row >= 0 && ImGui::IsMouseClicked(ImGuiMouseButton_Left)) {
    c.selected = it->row;
    c.reveal = true;
  }
}

// The phases: A, B and the change, largest change first.
void draw_phase_table(const Comparison& c) {
  constexpr ImGuiTableFlags kFlags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_ScrollY |
                                     ImGuiTableFlags_SizingFixedFit;
  if (!ImGui::BeginTable("compare_phases_table", 4, kFlags)) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("Phase", ImGuiTableColumnFlags_WidthStretch);
  for (const char* name : {"A", "B", "Change"}) ImGui::TableSetupColumn(name);
  ImGui::TableHeadersRow();
  for (const DiffRow& r : c.diff.phases) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted((r.name_a.empty() ? r.name_b : r.name_a).c_str());
    time_cells(r);
  }
  ImGui::EndTable();
}

// The layer rows the table shows: those matching the filter, in the order the sort asks
// (none: the diff's, by the change in self time); absent times sort below every time.
void sort_rows(Comparison& c, const ImGuiTableSortSpecs* specs) {
  const std::vector<DiffRow>& layers = c.diff.layers;
  c.rows.clear();
  c.rows_filter = c.filter;
  for (size_t i = 0; i < layers.size(); ++i)
    if (!c.filter[0] || render::contains_ignoring_case(layers[i].name_a, c.filter) ||
        render::contains_ignoring_case(layers[i].name_b, c.filter))
      c.rows.push_back(i);
  if (!specs || specs->SpecsCount == 0) return;
  const ImGuiTableColumnSortSpecs& sort = specs->Specs[0];
  const bool ascending = sort.SortDirection != ImGuiSortDirection_Descending;
  constexpr Ns kAbsent = std::numeric_limits<Ns>::min();
  auto key = [&](size_t i) -> Ns {
    const DiffRow& r = layers[i];
    switch (sort.ColumnIndex) {
      case kA: return r.a.value_or(kAbsent);
      case kB: return r.b.value_or(kAbsent);
      case kChange: return r.delta();
      case kSelf: return r.self_delta();
      default: return Ns(i);
    }
  };
  if (sort.ColumnIndex == kPath) {
    std::vector<std::string> paths(layers.size());
    for (size_t i : c.rows) paths[i] = row_path(layers[i]);
    std::stable_sort(c.rows.begin(), c.rows.end(), [&](size_t x, size_t y) { return ascending ? paths[x] < paths[y] : paths[y] < paths[x]; });
  } else {
    std::stable_sort(c.rows.begin(), c.rows.end(), [&](size_t x, size_t y) { return ascending ? key(x) < key(y) : key(y) < key(x); });
  }
}

// One layer row: a click picks it (outlined in the picture).
void draw_layer_row(Viewer& v, Comparison& c, size_t i) {
  const DiffRow& r = c.diff.layers[i];
  ImGui::TableNextRow();
  ImGui::TableNextColumn();
  ImGui::PushID(int(i));
  if (ImGui::Selectable(std::to_string(i + 1).c_str(), int64_t(i) == c.selected, ImGuiSelectableFlags_SpanAllColumns))
    c.selected = int64_t(i);
  ImGui::PopID();
  ImGui::TableNextColumn();
  const std::string path = row_path(r);
  const std::string shown = render::elide_middle(path, ImGui::GetContentRegionAvail().x, v.metrics);
  const bool one_side = !r.a || !r.b;
  if (one_side) ImGui::TextColored(colour_vec(render::change_colour(r)), "%s", shown.c_str());
  else ImGui::TextUnformatted(shown.c_str());
  if (ImGui::IsItemHovered())
    tooltip(v, "%s%s%s", path.c_str(), r.detail.empty() ? "" : "\n", r.detail.c_str());
  time_cells(r);
  ImGui::TableNextColumn();
  figure(change_text(r.self_delta()), self_colour(r));
}

// The layers, sortable by any column and filtered by name, in the height left.
void draw_layer_table(Viewer& v, Comparison& c) {
  const float s = v.scale;
  ImGui::SetNextItemWidth(280 * s);
  if (ImGui::InputTextWithHint("##compare_filter", "filter layers (e.g. Linear, Backward/)", c.filter, sizeof c.filter))
    c.sort_again = true;
  ImGui::SameLine();
  ImGui::TextDisabled("%zu of %zu layer rows; ranked by the change in self time (a layer's time less its child layers')",
                      c.rows.size(), c.diff.layers.size());
  if (c.reveal && c.selected >= 0 &&
      std::find(c.rows.begin(), c.rows.end(), size_t(c.selected)) == c.rows.end() && c.filter[0]) {
    c.filter[0] = 0;  // the row picked in the picture is filtered out: show every row
    c.sort_again = true;
  }
  constexpr ImGuiTableFlags kFlags = ImGuiTableFlags_Sortable | ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV |
                                     ImGuiTableFlags_ScrollY | ImGuiTableFlags_Resizable | ImGuiTableFlags_SizingFixedFit;
  const float height = std::max(ImGui::GetContentRegionAvail().y, 6 * ImGui::GetFrameHeight());
  if (!ImGui::BeginTable("compare_layers", kColumns, kFlags, ImVec2(0, height))) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("#", ImGuiTableColumnFlags_DefaultSort | ImGuiTableColumnFlags_PreferSortAscending, 0, kRank);
  ImGui::TableSetupColumn("Layer (A ~ B where they differ)", ImGuiTableColumnFlags_WidthStretch, 0, kPath);
  const float time_w = 90 * s;
  ImGui::TableSetupColumn("A", ImGuiTableColumnFlags_PreferSortDescending, time_w, kA);
  ImGui::TableSetupColumn("B", ImGuiTableColumnFlags_PreferSortDescending, time_w, kB);
  ImGui::TableSetupColumn("Change", ImGuiTableColumnFlags_PreferSortDescending, time_w, kChange);
  ImGui::TableSetupColumn("Self change", ImGuiTableColumnFlags_PreferSortDescending, time_w, kSelf);
  ImGui::TableHeadersRow();
  ImGuiTableSortSpecs* specs = ImGui::TableGetSortSpecs();
  if (c.sort_again || (specs && specs->SpecsDirty) || c.rows_filter != c.filter) {
    sort_rows(c, specs);
    if (specs) specs->SpecsDirty = false;
    c.sort_again = false;
  }
  const float row_h = ImGui::GetTextLineHeight() + 2 * ImGui::GetStyle().CellPadding.y;
  if (c.reveal) {  // picked in the picture: its row in the middle of the view
    const auto at = std::find(c.rows.begin(), c.rows.end(), size_t(std::max<int64_t>(c.selected, 0)));
    if (at != c.rows.end()) ImGui::SetScrollY(std::max(0.0f, float(at - c.rows.begin()) * row_h - (ImGui::GetWindowHeight() - row_h) * 0.5f));
    c.reveal = false;
  }
  ImGuiListClipper clipper;
  clipper.Begin(int(c.rows.size()), row_h);
  while (clipper.Step())
    for (int k = clipper.DisplayStart; k < clipper.DisplayEnd; ++k) draw_layer_row(v, c, c.rows[size_t(k)]);
  ImGui::EndTable();
}

}  // namespace

void start_compare(Viewer& v, const std::string& path) {
  if (!v.trace || !v.trace->annotation) return;
  if (v.loading) cancel_load(v);
  v.error.clear();
  auto job = std::make_unique<LoadJob>();
  job->path = path;
  job->options = options_for(v, path, job->model_file);
  job->compare_with = v.trace.get();
  job->started = std::chrono::steady_clock::now();
  LoadJob* j = job.get();
  const Prepared* a = v.trace.get();
  j->worker = std::thread([j, a] {
    compare_worker(*j, *a);
    j->done = true;
  });
  v.loading = std::move(job);
}

void adopt_comparison(Viewer& v, LoadJob& done) {
  if (!v.trace || v.trace.get() != done.compare_with) return;  // A went away meanwhile
  v.trace->comparison = std::move(done.comparison);
  // The Compare tab in front, with room: unless its height was chosen, the bottom panel takes
  // over half the window.
  v.panels.bottom_tab = std::string_view("compare");
  v.panels.show_levels = true;
  if (v.panels.bottom_h <= 0) v.panels.bottom_h = ImGui::GetIO().DisplaySize.y * 0.55f;
}

bool has_comparison(const Viewer& v) { return v.trace && v.trace->comparison; }

void close_comparison(Viewer& v) {
  if (v.trace) v.trace->comparison.reset();
}

void draw_compare_tab(Viewer& v) {
  if (!has_comparison(v)) return;
  Comparison& c = *v.trace->comparison;
  const float s = v.scale, gap = ImGui::GetStyle().ItemSpacing.x;
  const float phases_w = std::clamp(ImGui::GetContentRegionAvail().x * 0.26f, 280 * s, 420 * s);
  const float picture_w = ImGui::GetContentRegionAvail().x - phases_w - gap;
  lay_out(v, c, picture_w);
  draw_header(v, c);
  if (!has_comparison(v)) return;  // closed from its header
  ImGui::Spacing();
  const float top_h = std::max(c.layout.height, 6 * ImGui::GetFrameHeight()) + 4 * s;
  ImGui::BeginChild("compare_picture", ImVec2(picture_w, top_h), false, ImGuiWindowFlags_NoScrollbar);
  draw_picture(v, c);
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("compare_phases", ImVec2(0, top_h), false);
  draw_phase_table(c);
  ImGui::EndChild();
  draw_layer_table(v, c);
}

void write_compare_fields(JsonWriter& j, const Viewer& v) {
  j.field("loaded", has_comparison(v));
  if (!has_comparison(v)) return;
  const Comparison& c = *v.trace->comparison;
  const Diff& d = c.diff;
  j.field("a", std::string_view(d.file_a)).field("b", std::string_view(d.file_b)).field("time_basis", std::string_view(d.time_basis));
  j.field("aligned_share", d.aligned_share).field("same_model", d.same_model);
  j.field("layers_a", uint64_t(d.layers_a)).field("layers_b", uint64_t(d.layers_b)).field("layers_aligned", uint64_t(d.layers_aligned));
  j.field("iteration_a_ns", d.iteration_a).field("iteration_b_ns", d.iteration_b);
  j.field("layer_rows", uint64_t(d.layers.size())).field("rows_shown", uint64_t(c.rows.size()));
  j.field("phase_rows", uint64_t(d.phases.size())).field("selected", c.selected);
  j.key("explain").begin_array();
  for (const std::string& e : d.explain) j.value(std::string_view(e));
  j.end_array();
  j.key("notes").begin_array();
  for (const std::string& n : d.notes) j.value(std::string_view(n));
  j.end_array();
  j.key("top_rows").begin_array();  // the layer table's first rows, as shown
  for (size_t k = 0; k < c.rows.size() && k < 5; ++k) {
    const DiffRow& r = d.layers[c.rows[k]];
    j.begin_object().field("path_a", std::string_view(r.name_a)).field("path_b", std::string_view(r.name_b));
    j.field("delta_ns", r.delta()).field("self_delta_ns", r.self_delta()).field("detail", std::string_view(r.detail)).end_object();
  }
  j.end_array();
  size_t items_b = 0, outlined_a = 0, outlined_b = 0;
  for (const render::CompareItem& it : c.layout.items) items_b += it.b;
  for (const render::DrawRect& r : c.layout.rects)
    if (r.flags & render::kSelected) ++(r.y0 >= c.layout.block_y[1] ? outlined_b : outlined_a);
  j.key("picture").begin_object();
  j.field("rows", c.layout.rows).field("items_a", uint64_t(c.layout.items.size() - items_b)).field("items_b", uint64_t(items_b));
  j.field("outlined_a", outlined_a > 0).field("outlined_b", outlined_b > 0).field("width", double(c.layout.width));
  j.end_object();
}

}  // namespace strata::viewer
