// The Summary tab's ranked tables: phases, layers, kernels and CPU ops with their GPU, CPU and
// wall time, all four ranked by the one time chosen at the top ("rank by: GPU time | CPU time |
// wall time"); a row clicked goes to its longest occurrence on the timeline. The figures are
// `strata summary`'s: its phase and layer rows (core/annotate/summary_rows.h), the analyses'
// kernels and CPU ops, and for kernels and layers their efficiency (core/efficiency).
//
// Which times an item has: a phase's or a layer's wall time is its span on the host, its CPU time
// that span less the calls that waited for the GPU, its GPU time the GPU busy time of its work; a
// kernel runs on the GPU only (no CPU time); a CPU op's figures are its time on the host (its GPU
// work is not summed per name).
// A table whose items lack the chosen time is ranked by wall time, and says so.
#include "app/viewer/viewer.h"

#include "core/annotate/summary_rows.h"
#include "core/json_writer.h"
#include "render/elide.h"
#include "render/labels.h"
#include "render/roofline_layout.h"

#include <imgui.h>

#include <algorithm>
#include <array>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

namespace strata::viewer {

namespace {

constexpr size_t kRows = 50;  // as many as `strata summary --json` lists of kernels and layers
constexpr const char* kUnknown = "\xE2\x80\x93";  // "–"

struct SummaryRow {
  std::string name;
  Ns gpu = -1, cpu = -1, wall = 0;  // -1: the item has no such time
  uint64_t count = 0;               // occurrences (phases, layers) or calls (kernels, CPU ops)
  render::ItemRef target;           // its longest occurrence on the timeline (invalid: none)
  bool efficiency = false;          // a kernel or layer row: `tflops` and `roof` are shown
  std::string tflops = kUnknown, roof = kUnknown;
};

struct SummaryTable {
  const char* key;    // the layout dump's
  const char* title;  // above the table
  const char* what;   // its name column
  std::vector<SummaryRow> rows;  // in the summary's order
  std::vector<std::string_view> shown;  // the names as drawn (kernels: their distinct short forms)
  std::vector<uint32_t> order;  // rows ranked
  bool efficiency = false;
};

Ns figure(const SummaryRow& r, RankBy by) { return by == RankBy::Gpu ? r.gpu : by == RankBy::Cpu ? r.cpu : r.wall; }

// The time a table ranks by: the one chosen, or wall time where its items have no such time.
RankBy table_rank(const SummaryTable& t, RankBy by) {
  return t.rows.empty() || figure(t.rows.front(), by) >= 0 ? by : RankBy::Wall;
}

}  // namespace

struct SummaryTables {
  std::array<SummaryTable, 4> tables{{{"phases", "Phases", "phase", {}, {}, {}, false},
                                      {"layers", "Layers", "layer", {}, {}, {}, true},
                                      {"kernels", "Kernels", "kernel", {}, {}, {}, true},
                                      {"cpu_ops", "CPU ops", "CPU op (outermost)", {}, {}, {}, false}}};
  bool layers_capped = false;  // the summary lists its top layers by GPU time only
  int ranked = -1;             // the RankBy `order` holds
};

void SummaryTablesDelete::operator()(SummaryTables* t) const { delete t; }

const char* rank_by_key(RankBy r) { return r == RankBy::Gpu ? "gpu" : r == RankBy::Cpu ? "cpu" : "wall"; }

int choice_row(Viewer& v, const char* label, std::span<const char* const> names, int chosen, std::vector<Choice>& drawn) {
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted(label);
  drawn.clear();
  int clicked = -1;
  for (size_t i = 0; i < names.size(); ++i) {
    ImGui::SameLine(0, i ? 12 * v.scale : 6 * v.scale);
    if (ImGui::RadioButton(names[i], chosen == int(i))) clicked = int(i);
    const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
    drawn.push_back({names[i], {a.x, a.y, b.x - a.x, b.y - a.y}});
  }
  return clicked;
}

namespace {

// The phase and layer rows `strata summary` lists (its top layers by GPU time).
void read_summary(const Prepared& p, SummaryTables& t) {
  const SummaryRows d = summary_rows(*p.annotation);
  auto add = [](std::string name, Ns time, Ns cpu, Ns gpu, uint64_t count, std::vector<SummaryRow>& rows) {
    SummaryRow& r = rows.emplace_back();
    r.name = std::move(name);
    r.wall = time;
    r.cpu = cpu;
    r.gpu = gpu;
    r.count = count;
  };
  for (const SummaryPhaseRow& ph : d.phases) add(ph.name, ph.time, ph.cpu, ph.gpu_busy, ph.count, t.tables[0].rows);
  for (size_t i = 0; i < d.layers.size() && i < kRows; ++i) {
    const SummaryLayerRow& l = d.layers[i];
    add(l.path, l.time, l.cpu, l.gpu_busy, l.count, t.tables[1].rows);
  }
  t.layers_capped = d.layers.size() > kRows;
}

// Where phase and layer rows go: the longest node of each (a phase by its name, a layer by its
// path without the iteration, as the summary groups them), then the tier span drawing it.
void find_targets(const Prepared& p, SummaryTables& t) {
  const AnnotationTree& tree = p.annotation->tree;
  std::unordered_map<std::string, size_t> phase_row, layer_row;
  std::unordered_set<std::string_view> leaf_names;  // a layer path's last part: most layer nodes need no path built
  for (size_t i = 0; i < t.tables[0].rows.size(); ++i) phase_row.emplace(t.tables[0].rows[i].name, i);
  for (size_t i = 0; i < t.tables[1].rows.size(); ++i) {
    const std::string& path = t.tables[1].rows[i].name;
    layer_row.emplace(path, i);
    leaf_names.insert(std::string_view(path).substr(path.rfind('/') + 1));
  }
  std::vector<NodeId> phase_node(t.tables[0].rows.size(), kNoNode), layer_node(t.tables[1].rows.size(), kNoNode);
  auto keep_longest = [&](NodeId& best, NodeId n) {
    if (best == kNoNode || tree.duration(n) > tree.duration(best)) best = n;
  };
  for (NodeId n = 0; n < tree.size(); ++n) {
    if (tree.kind[n] == NodeKind::Phase) {
      if (auto it = phase_row.find(std::string(tree.name_of(n))); it != phase_row.end()) keep_longest(phase_node[it->second], n);
    } else if (tree.kind[n] == NodeKind::Layer && leaf_names.contains(tree.name_of(n))) {
      std::string path = tree.path(n);
      path.erase(0, path.find('/') + 1);
      if (auto it = layer_row.find(path); it != layer_row.end()) keep_longest(layer_node[it->second], n);
    }
  }
  std::unordered_map<NodeId, render::ItemRef> span_of;
  const std::vector<render::Tier>& tiers = p.timeline.tiers().tiers;
  for (uint32_t ti = 0; ti < tiers.size(); ++ti)
    for (uint32_t i = 0; i < tiers[ti].size(); ++i) span_of.emplace(tiers[ti].node[i], render::ItemRef::span(ti, i));
  auto target = [&](NodeId n) {
    auto it = span_of.find(n);
    return it != span_of.end() ? it->second : render::ItemRef{};
  };
  for (size_t i = 0; i < phase_node.size(); ++i) t.tables[0].rows[i].target = target(phase_node[i]);
  for (size_t i = 0; i < layer_node.size(); ++i) t.tables[1].rows[i].target = target(layer_node[i]);
}

// A kernel's or a layer's TFLOP/s and share of the roofline, "–" where its work is unknown.
void add_efficiency(SummaryTable& table, const std::vector<EfficiencyStat>& stats) {
  std::unordered_map<std::string_view, const EfficiencyStat*> by_name;
  for (const EfficiencyStat& s : stats) by_name.emplace(s.name, &s);
  for (SummaryRow& r : table.rows) {
    r.efficiency = true;
    auto it = by_name.find(r.name);
    if (it == by_name.end()) continue;
    const render::EfficiencyCells c = render::efficiency_cells(*it->second);
    r.tflops = c.tflops, r.roof = c.roof;
  }
}

// Kernels and CPU ops: the analyses' lists, by name, as the summary writes them.
void add_name_stats(SummaryTable& table, const std::vector<NameStat>& stats, bool gpu) {
  for (size_t i = 0; i < stats.size() && i < kRows; ++i) {
    const NameStat& k = stats[i];
    SummaryRow r;
    r.name = k.name;
    r.wall = k.total;
    (gpu ? r.gpu : r.cpu) = k.total;
    r.count = k.count;
    if (k.longest != kNoEvent) r.target = render::ItemRef::event(k.longest);
    table.rows.push_back(std::move(r));
  }
}

SummaryTables& ensure_tables(Prepared& p) {
  if (p.summary_tables) return *p.summary_tables;
  p.summary_tables.reset(new SummaryTables);
  SummaryTables& t = *p.summary_tables;
  const Analyses& r = p.annotation->analyses;
  read_summary(p, t);
  find_targets(p, t);
  add_name_stats(t.tables[2], r.kernels, true);
  add_name_stats(t.tables[3], r.cpu_ops, false);
  add_efficiency(t.tables[1], r.efficiency.layers);
  add_efficiency(t.tables[2], r.efficiency.kernel_names);
  for (SummaryTable& table : t.tables) {
    std::vector<std::string_view> full;
    for (const SummaryRow& row : table.rows) full.push_back(row.name);
    // Kernel names are C++ signatures: their distinct short forms say more in the same room.
    table.shown = &table == &t.tables[2] ? render::distinct_short_names(full) : full;
  }
  return t;
}

// Each table's rows by the chosen time, longest first; ties keep the summary's order.
void rank(SummaryTables& t, RankBy by) {
  if (t.ranked == int(by)) return;
  for (SummaryTable& table : t.tables) {
    const RankBy tb = table_rank(table, by);
    table.order.resize(table.rows.size());
    std::iota(table.order.begin(), table.order.end(), 0u);
    std::stable_sort(table.order.begin(), table.order.end(),
                     [&](uint32_t a, uint32_t b) { return figure(table.rows[a], tb) > figure(table.rows[b], tb); });
  }
  t.ranked = int(by);
}

std::string cell(Ns t) { return t < 0 ? kUnknown : format_duration(t); }

// A figure right-aligned in its cell, dimmed when unknown.
void right_aligned(const std::string& text) {
  ImGui::SetCursorPosX(ImGui::GetCursorPosX() + ImGui::GetContentRegionAvail().x - ImGui::CalcTextSize(text.c_str()).x);
  if (text == kUnknown) ImGui::TextDisabled("%s", text.c_str());
  else ImGui::TextUnformatted(text.c_str());
}

void draw_table(Viewer& v, const SummaryTable& table, RankBy by, float height) {
  const float s = v.scale;
  const RankBy tb = table_rank(table, by);
  constexpr ImGuiTableFlags kFlags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_ScrollY |
                                     ImGuiTableFlags_SizingFixedFit;
  if (!ImGui::BeginTable(table.key, table.efficiency ? 7 : 5, kFlags, ImVec2(0, height))) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn(table.what, ImGuiTableColumnFlags_WidthStretch);
  // The column ranked by is marked in its header.
  static constexpr std::pair<RankBy, const char*> kTimes[] = {{RankBy::Gpu, "GPU"}, {RankBy::Cpu, "CPU"}, {RankBy::Wall, "wall"}};
  for (const auto& [mode, name] : kTimes)
    ImGui::TableSetupColumn(mode == tb ? (std::string(name) + " \xE2\x96\xBE").c_str() : name, 0, 74 * s);
  ImGui::TableSetupColumn("count", 0, 48 * s);
  if (table.efficiency) {
    ImGui::TableSetupColumn("TFLOP/s", 0, 56 * s);
    ImGui::TableSetupColumn("roof", 0, 40 * s);
  }
  ImGui::TableHeadersRow();
  render::ItemRef clicked;
  for (uint32_t i : table.order) {
    const SummaryRow& r = table.rows[i];
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    // The name is drawn as text beside an unlabelled selectable: names may hold "##", which
    // Dear ImGui reads as the end of a label.
    ImGui::PushID(int(i));
    if (ImGui::Selectable("##row", false, ImGuiSelectableFlags_SpanAllColumns) && r.target.valid()) clicked = r.target;
    if (ImGui::IsItemHovered())
      tooltip(v, "%.*s\n%s", int(std::min<size_t>(r.name.size(), 400)), r.name.data(),
              r.target.valid() ? "click: go to its longest one" : "not on the timeline");
    ImGui::PopID();
    ImGui::SameLine(0, 0);
    ImGui::TextUnformatted(render::elide_middle(table.shown[i], ImGui::GetContentRegionAvail().x, v.metrics).c_str());
    for (Ns t : {r.gpu, r.cpu, r.wall}) {
      ImGui::TableNextColumn();
      right_aligned(cell(t));
    }
    ImGui::TableNextColumn();
    right_aligned(std::to_string(r.count));
    if (table.efficiency) {
      ImGui::TableNextColumn();
      right_aligned(r.tflops);
      ImGui::TableNextColumn();
      right_aligned(r.roof);
    }
  }
  ImGui::EndTable();
  if (clicked.valid()) focus_on(v, clicked);
}

// What a table's heading says besides its title: how it is ranked when not as asked.
std::string table_note(const SummaryTables& t, const SummaryTable& table, RankBy by) {
  if (table.rows.empty()) return "none";
  std::string note;
  if (table_rank(table, by) != by)
    note = by == RankBy::Cpu ? "no CPU time: by wall time" : "no GPU time per name: by wall time";
  if (&table == &t.tables[1] && t.layers_capped && by != RankBy::Gpu)
    note += std::string(note.empty() ? "" : "; ") + "the summary's top " + std::to_string(kRows) + " by GPU time";
  return note;
}

}  // namespace

void draw_rank_toggle(Viewer& v) {
  static constexpr const char* kModes[] = {"GPU time", "CPU time", "wall time"};
  const int picked = choice_row(v, "Rank by:", kModes, int(v.panels.summary_rank), v.panels.summary_rank_buttons);
  if (picked >= 0) v.panels.summary_rank = RankBy(picked);
  ImGui::SameLine(0, 12 * v.scale);
  ImGui::TextDisabled("(?)");
  if (ImGui::IsItemHovered())
    tooltip(v, "A phase's or a layer's wall time is its span on the host; its CPU time is that span less the calls "
               "that waited for the GPU; its GPU time is the GPU busy time of its work. Kernels have no CPU time, CPU "
               "ops no GPU time per name: those tables rank by wall time then.");
}

void draw_summary_tables(Viewer& v) {
  if (!v.trace || !v.trace->annotation) return;
  SummaryTables& t = ensure_tables(*v.trace);
  const float s = v.scale;
  const RankBy by = v.panels.summary_rank;
  rank(t, by);
  // Two tables side by side where a name keeps room beside the figures, else one under another.
  const int cols = ImGui::GetContentRegionAvail().x > 1240 * s ? 2 : 1;
  if (!ImGui::BeginTable("summary_tables", cols, ImGuiTableFlags_SizingStretchSame)) return;
  for (const SummaryTable& table : t.tables) {
    ImGui::TableNextColumn();
    ImGui::PushFont(v.font_bold);
    ImGui::TextUnformatted(table.title);
    ImGui::PopFont();
    if (const std::string note = table_note(t, table, by); !note.empty()) {
      ImGui::SameLine();
      ImGui::TextDisabled("(%s)", note.c_str());
    }
    if (table.rows.empty()) continue;
    // Up to ten rows in view (and the header), a row being a line and the cells' padding; the
    // rest scroll. A table that fits shows no scrollbar over its last column.
    const float row = ImGui::GetTextLineHeight() + 2 * ImGui::GetStyle().CellPadding.y;
    const float height = float(std::min<size_t>(table.rows.size(), 10) + 1) * row + 2 * ImGui::GetStyle().CellPadding.y;
    draw_table(v, table, by, height);
    ImGui::Spacing();
  }
  ImGui::EndTable();
}

void write_summary_tables_fields(JsonWriter& j, Viewer& v) {
  SummaryTables& t = ensure_tables(*v.trace);
  const RankBy by = v.panels.summary_rank;
  rank(t, by);
  j.field("rank_by", rank_by_key(by));
  write_choices(j, "buttons", v.panels.summary_rank_buttons);  // empty before the tab is shown
  for (const SummaryTable& table : t.tables) {
    j.key(table.key).begin_object();
    j.field("ranked_by", rank_by_key(table_rank(table, by)));
    j.key("rows").begin_array();
    for (uint32_t i : table.order) {
      const SummaryRow& r = table.rows[i];
      j.begin_object().field("name", std::string_view(r.name));
      if (r.gpu >= 0) j.field("gpu_ns", r.gpu);
      if (r.cpu >= 0) j.field("cpu_ns", r.cpu);
      j.field("wall_ns", r.wall).field("count", r.count).field("target", r.target.valid());
      if (r.efficiency) j.field("tflops", std::string_view(r.tflops)).field("roof", std::string_view(r.roof));
      j.end_object();
    }
    j.end_array().end_object();
  }
}

}  // namespace strata::viewer
