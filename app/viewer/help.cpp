// The key map and the colour legend (`?`, or Help ▸ Keys and colours), over everything as
// Perfetto shows its keys: every key the viewer answers to, and what each colour means (the
// phases, the kinds of work on the tracks, the outlines, the Summary's idle causes, the Compare
// tab's changes). Esc, `?` or its close button put it away.
#include "app/viewer/viewer.h"

#include "render/compare_layout.h"
#include "render/legend.h"

#include <imgui.h>

#include <span>

namespace strata::viewer {

namespace {

constexpr const char* kTitle = "Keys and colours";

struct KeyRow {
  const char* keys;
  const char* what;
};

constexpr KeyRow kView[] = {
    {"Wheel, W / S", "zoom at the cursor"},
    {"Drag, A / D", "pan"},
    {"Shift+wheel", "scroll the rows"},
    {"Shift+drag, drag the ruler", "measure a range (its figures in the details)"},
    {"Click the ruler", "drop a flag, or take one away"},
    {"0", "the whole trace"},
    {"Backspace, Alt+Left", "back to the view and selection before"},
    {"Esc", "close a menu, dialog or list; else back"},
};
constexpr KeyRow kSelection[] = {
    {"Click", "select (details, levels, breadcrumbs)"},
    {"Double-click, F", "zoom to the selection"},
    {"U", "select the parent (the breadcrumb before it)"},
    {"Right-click a row title", "pin the row to the top, collapse it"},
    {"Click a memory lane", "what is alive then: category, layer, op"},
};
constexpr KeyRow kSearch[] = {
    {"/ or Ctrl+F", "search names"},
    {"Enter, Shift+Enter", "next, previous match"},
    {"Esc in the search box", "clear the search"},
    {"Click a name in its list", "its longest occurrence; Enter goes through its others"},
};
constexpr KeyRow kWindow[] = {
    {"Ctrl+O", "open a trace (Enter or double-click opens)"},
    {"Ctrl+Shift+O", "compare the open trace (A) with another run (B): the Compare tab"},
    {"Ctrl+M", "load the model structure (print(model) text): layers named layer4.1.conv2"},
    {"Ctrl+R", "attach to a running job and record it"},
    {"Drag a splitter", "resize the details or the bottom panel"},
    {"Ctrl+Q", "quit"},
    {"?", "this key map"},
};

void heading(Viewer& v, const char* text) {
  ImGui::Spacing();
  ImGui::PushFont(v.font_bold);
  ImGui::TextUnformatted(text);
  ImGui::PopFont();
}

void keys(Viewer& v, const char* title, std::span<const KeyRow> rows) {
  heading(v, title);
  if (!ImGui::BeginTable(title, 2, ImGuiTableFlags_SizingFixedFit)) return;
  ImGui::TableSetupColumn("keys", ImGuiTableColumnFlags_WidthFixed, 170 * v.scale);
  ImGui::TableSetupColumn("what", ImGuiTableColumnFlags_WidthStretch);
  for (const KeyRow& r : rows) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(r.keys);
    ImGui::TableNextColumn();
    ImGui::TextWrapped("%s", r.what);
  }
  ImGui::EndTable();
}

void colours(Viewer& v, const char* title, const std::vector<render::LegendEntry>& entries) {
  heading(v, title);
  for (const render::LegendEntry& e : entries) colour_chip(v, e.colour, e.what);
}

}  // namespace

void colour_chip(Viewer& v, render::Rgba colour, const std::string& what) {
  const float side = ImGui::GetTextLineHeight();
  const ImVec2 p = ImGui::GetCursorScreenPos();
  ImGui::GetWindowDrawList()->AddRectFilled(ImVec2(p.x, p.y + 2 * v.scale), ImVec2(p.x + side * 1.6f, p.y + side - 2 * v.scale), ImU32(colour));
  ImGui::Dummy(ImVec2(side * 1.6f, side));
  ImGui::SameLine();
  ImGui::TextWrapped("%s", what.c_str());
}

void draw_keymap(Viewer& v) {
  const float s = v.scale;
  if (v.panels.show_keymap && !ImGui::IsPopupOpen(kTitle)) ImGui::OpenPopup(kTitle);
  place_dialog(900 * s, 600 * s, 0, 0, true);
  bool open = true;
  if (!ImGui::BeginPopupModal(kTitle, &open, ImGuiWindowFlags_NoSavedSettings)) {
    v.panels.show_keymap = false;
    return;
  }
  note_dialog(v, kTitle);
  if (!open || !v.panels.show_keymap) {
    ImGui::CloseCurrentPopup();
    v.panels.show_keymap = false;
  }
  const int cols = ImGui::GetContentRegionAvail().x > 640 * s ? 2 : 1;
  if (ImGui::BeginTable("keymap", cols, ImGuiTableFlags_SizingStretchSame | ImGuiTableFlags_ScrollY)) {
    ImGui::TableNextColumn();
    keys(v, "The view", kView);
    keys(v, "The selection", kSelection);
    keys(v, "Search", kSearch);
    keys(v, "The window", kWindow);
    if (cols > 1) ImGui::TableNextColumn();
    colours(v, "Phases", render::phase_legend());
    heading(v, "Iterations and layers");
    colour_chip(v, render::base_colour(render::Hue::Iteration), "iterations (two shades, one after the other)");
    const uint64_t layer = render::name_hash("layer");
    colour_chip(v, render::layer_colour(layer, false), "a layer's forward work: one colour per layer name");
    colour_chip(v, render::layer_colour(layer, true), "the same layer's backward work, a step darker");
    colours(v, "Tracks", render::track_legend());
    heading(v, "Outlines");
    ImGui::TextWrapped("White: the selection. Yellow, with arrows: what belongs to it (its launches and GPU ops, "
                       "its forward or backward counterpart). Orange: search matches.");
    const ReduceOptions reduce = v.trace && v.trace->annotation ? v.trace->annotation->reduce_options : ReduceOptions{};
    ImGui::TextWrapped("Levels view: grey blocks stand for small items merged (each under %.0f%% of the parent); "
                       "\"name \xC3\x97N\" for N same-name items in a row.", 100.0 * reduce.tiny_share);
    colours(v, "GPU idle causes (Summary)", render::idle_cause_legend());
    colours(v, "Layers compared, B against A (Compare)", render::change_legend());
    ImGui::EndTable();
  }
  ImGui::EndPopup();
}

}  // namespace strata::viewer
