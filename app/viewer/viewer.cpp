// The main window's contents: menus, the welcome and loading screens, and the layout of the
// panels (breadcrumbs and search, timeline, details, levels and summary).
#include "app/viewer/viewer.h"

#include <imgui.h>

#include <GLFW/glfw3.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <iterator>
#include <span>
#include <string>

namespace strata::viewer {

namespace {

bool always(const Viewer&) { return true; }
bool single_trace(const Viewer& v) { return !v.job_view.job; }
bool whole_job(const Viewer& v) { return v.job_view.job != nullptr; }

// The bottom panel's tabs, in the order shown. A tab is added here and nowhere else.
constexpr BottomTab kBottomTabs[] = {
    {"levels", "Levels", "levels_scroll", draw_levels, always},
    {"summary", "Summary", "summary_scroll", draw_summary, always},
    {"batch", "Batch size", "batch_scroll", draw_batch_tab, always},
    {"whatif", "What-if", "whatif_scroll", draw_whatif_tab, single_trace},
    {"roofline", "Roofline", "roofline_scroll", draw_roofline_tab, always},
    {"job", "Job", "job_scroll", draw_job_tab, whole_job},
    {"ranks", "Ranks", "ranks_scroll", draw_ranks_tab, whole_job},
    {"compare", "Compare", "compare_scroll", draw_compare_tab, has_comparison},
};

// The tabs available now, the one asked for (`--tab`) brought to the front the first time
// they are drawn.
void draw_bottom_tabs(Viewer& v) {
  if (!ImGui::BeginTabBar("tabs")) return;
  const std::string asked = std::move(v.panels.bottom_tab.name);
  v.panels.bottom_tab.name.clear();
  v.panels.shown_tab.clear();
  for (const BottomTab& t : kBottomTabs) {
    if (!t.available(v)) continue;
    const ImGuiTabItemFlags flags = asked == t.name ? ImGuiTabItemFlags_SetSelected : 0;
    if (!ImGui::BeginTabItem(t.title, nullptr, flags)) continue;
    v.panels.shown_tab = t.name;
    ImGui::BeginChild(t.scroll_id);
    v.panels.bottom_lines = ImGui::GetWindowHeight() / ImGui::GetTextLineHeightWithSpacing();
    {
      PartTimer part(v.capture.parts, t.name);
      t.draw(v);
    }
    ImGui::EndChild();
    ImGui::EndTabItem();
  }
  ImGui::EndTabBar();
}

}  // namespace

std::span<const BottomTab> bottom_tabs() { return kBottomTabs; }

const BottomTab* find_bottom_tab(std::string_view name) {
  for (const BottomTab& t : kBottomTabs)
    if (name == t.name) return &t;
  return nullptr;
}

TabRequest& TabRequest::operator=(std::string_view tab_name) {
  name = tab_name;
  return *this;
}

namespace {

// The file being loaded, its stage and progress, and Cancel.
void draw_loading_contents(Viewer& v) {
  LoadJob& j = *v.loading;
  const Stage st = j.progress.stage.load();
  text_wrapped(v, j.path);
  if (j.reannotate && !j.model_file.empty()) ImGui::TextWrapped("annotated again with the model structure %s", j.model_file.c_str());
  else if (j.reannotate) ImGui::TextWrapped("annotated again without a model structure");
  if (j.compare_with) ImGui::TextWrapped("to compare with %s", j.compare_with->model->path.c_str());
  float frac = st >= Stage::View ? 1.0f : float(j.progress.fraction());
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - j.started).count();
  char overlay[128];
  std::string what = stage_name(st);
  what[0] = char(std::toupper(static_cast<unsigned char>(what[0])));
  std::snprintf(overlay, sizeof overlay, "%s  %.0f%%  (%.1f s)", what.c_str(), double(frac) * 100, secs);
  ImGui::ProgressBar(frac, ImVec2(-1, 0), overlay);
  if (ImGui::Button("Cancel")) cancel_load(v), v.error = "Loading was cancelled.";
  if (j.ranks_total > 0) draw_ranks_arrived(v, j);
}

void draw_welcome(Viewer& v) {
  const float s = v.scale;
  ImVec2 avail = ImGui::GetContentRegionAvail();
  ImGui::SetCursorPos(ImVec2(ImGui::GetCursorPosX() + avail.x * 0.3f, ImGui::GetCursorPosY() + avail.y * 0.25f));
  ImGui::BeginGroup();
  ImGui::PushFont(v.font_bold);
  ImGui::TextUnformatted("Strata");
  ImGui::PopFont();
  ImGui::TextDisabled("A profiler for deep-learning training traces");
  ImGui::Spacing();
  ImGui::TextUnformatted("Drop a PyTorch profiler trace (.json, .json.gz) on this window, or");
  if (ImGui::Button("Open a trace...", ImVec2(200 * s, 0))) open_file_browser(v);
  if (v.loading) {  // here, above the recent files: a box over the window's middle covered them
    ImGui::Spacing();
    ImGui::PushItemWidth(std::min(520 * s, ImGui::GetContentRegionAvail().x));
    ImGui::BeginGroup();
    draw_loading_contents(v);
    ImGui::EndGroup();
    note_item_box(v, "loading box");
    ImGui::PopItemWidth();
  }
  if (!v.recent.empty()) {
    ImGui::Spacing();
    ImGui::BeginGroup();
    ImGui::TextDisabled("Recent");
    for (const std::string& r : v.recent)
      if (ImGui::Selectable(r.c_str())) start_load(v, r);
    ImGui::EndGroup();
    note_item_box(v, "recent files");
  }
  ImGui::EndGroup();
}

// Over the open trace while another loads (or the open one is annotated again).
void draw_loading(Viewer& v) {
  ImGuiIO& io = ImGui::GetIO();
  ImGui::SetNextWindowPos(ImVec2(io.DisplaySize.x * 0.5f, io.DisplaySize.y * 0.5f), ImGuiCond_Always, ImVec2(0.5f, 0.5f));
  ImGui::SetNextWindowSize(ImVec2(520 * v.scale, 0));
  ImGui::Begin("Loading", nullptr, ImGuiWindowFlags_NoCollapse | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoMove |
                                       ImGuiWindowFlags_NoSavedSettings);
  draw_loading_contents(v);
  ImGui::End();
}

void draw_menu(Viewer& v) {
  if (!ImGui::BeginMenuBar()) return;
  if (ImGui::BeginMenu("File")) {
    if (ImGui::MenuItem("Open...", "Ctrl+O")) open_file_browser(v);
    if (ImGui::BeginMenu("Open recent", !v.recent.empty())) {
      for (const std::string& r : v.recent)
        if (ImGui::MenuItem(r.c_str())) start_load(v, r);
      ImGui::EndMenu();
    }
    if (ImGui::MenuItem("Attach...", "Ctrl+R")) open_attach(v);
    ImGui::Separator();
    // Another run against the open one: the Compare tab.
    if (ImGui::MenuItem("Compare...", "Ctrl+Shift+O", false, v.trace != nullptr)) open_compare_browser(v);
    if (ImGui::MenuItem("Close comparison", nullptr, false, has_comparison(v))) close_comparison(v);
    ImGui::Separator();
    // The print(model) text the open trace's layers are named by (a single trace: a job's
    // ranks are annotated without one).
    const bool single = v.trace && !v.job_view.job;
    if (ImGui::MenuItem("Load model structure...", "Ctrl+M", false, single)) open_model_browser(v);
    if (single && !v.trace->model_file.empty()) {
      const std::string file = v.trace->model_file.substr(v.trace->model_file.find_last_of('/') + 1);
      const bool chosen = v.models.count(absolute_path(v.trace->model->path)) > 0;
      if (!chosen) {
        ImGui::MenuItem(("Model structure: " + file + " (--model)").c_str(), nullptr, false, false);
      } else if (ImGui::MenuItem(("Forget model structure (" + file + ")").c_str())) {
        set_model_choice(v, v.trace->model->path, "", {});
        start_reannotate(v, v.annotate_model_file, v.annotate.model_tree, false);  // --model's, if any
      }
    }
    ImGui::Separator();
    if (ImGui::MenuItem("Close", nullptr, false, v.trace != nullptr)) {
      if (v.loading && (v.loading->reannotate || v.loading->compare_with)) cancel_load(v);  // it reads the trace
      close_job(v);
      v.trace.reset();
    }
    ImGui::Separator();
    if (ImGui::MenuItem("Quit", "Ctrl+Q")) v.quit = true;
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("View")) {
    ImGui::MenuItem("Details panel", nullptr, &v.panels.show_details);
    ImGui::MenuItem("Levels and summary", nullptr, &v.panels.show_levels);
    if (ImGui::MenuItem("Whole trace", "0", false, v.trace != nullptr)) animate_to(v, v.timeline.view.limit_begin, v.timeline.view.limit_end);
    if (ImGui::MenuItem("Back", "Backspace", false, !v.timeline.history.empty())) go_back(v);
    if (ImGui::MenuItem("Select the parent", "U", false, v.sel.path.size() >= 2)) select_parent(v);
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("Help")) {
    if (ImGui::MenuItem("Keys and colours", "?")) v.panels.show_keymap = true;
    ImGui::EndMenu();
  }
  draw_recording_indicator(v);
  if (v.trace) {
    const TraceModel& m = *v.trace->model;
    std::string info = m.path.substr(m.path.find_last_of('/') == std::string::npos ? 0 : m.path.find_last_of('/') + 1) +
                       "   " + std::to_string(m.ev.size()) + " events";
    float w = ImGui::CalcTextSize(info.c_str()).x;
    ImGui::SameLine(ImGui::GetWindowWidth() - w - 16 * v.scale);
    ImGui::TextDisabled("%s", info.c_str());
  }
  ImGui::EndMenuBar();
}

}  // namespace

void draw_ui(Viewer& v) {
  ImGuiIO& io = ImGui::GetIO();
  const float s = v.scale;
  if (io.KeyCtrl && ImGui::IsKeyPressed(GLFW_KEY_O, false)) {
    if (io.KeyShift) open_compare_browser(v);
    else open_file_browser(v);
  }
  if (io.KeyCtrl && ImGui::IsKeyPressed(GLFW_KEY_M, false)) open_model_browser(v);
  if (io.KeyCtrl && ImGui::IsKeyPressed(GLFW_KEY_Q, false)) v.quit = true;
  v.panels.dialogs.clear();
  handle_window_keys(v);
  ImGui::SetNextWindowPos(ImVec2(0, 0));
  ImGui::SetNextWindowSize(io.DisplaySize);
  ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, ImVec2(6 * s, 4 * s));
  // glClear paints the background; a transparent main window saves a full-screen fill, which
  // matters under software rendering (llvmpipe).
  ImGui::SetNextWindowBgAlpha(0.0f);
  ImGui::Begin("##main", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_MenuBar |
                   ImGuiWindowFlags_NoBringToFrontOnFocus | ImGuiWindowFlags_NoScrollWithMouse |
                   ImGuiWindowFlags_NoSavedSettings);
  ImGui::PopStyleVar();
  draw_menu(v);
  if (!v.error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.55f, 0.45f, 1));
    text_wrapped(v, v.error);
    ImGui::PopStyleColor();
    ImGui::SameLine();
    if (ImGui::SmallButton("Dismiss")) v.error.clear();
  }
  if (!v.trace) {
    draw_welcome(v);
  } else {
    // Toolbar: breadcrumbs on the left, search on the right.
    float search_w = 420 * s;
    {
      PartTimer part(v.capture.parts, "toolbar");
      ImGui::BeginChild("crumbs", ImVec2(ImGui::GetContentRegionAvail().x - search_w, ImGui::GetFrameHeight() + 2 * s), false,
                        ImGuiWindowFlags_NoScrollbar);
      v.panels.crumbs_box = {ImGui::GetWindowPos().x, ImGui::GetWindowPos().y, ImGui::GetWindowWidth(), ImGui::GetWindowHeight()};
      draw_breadcrumbs(v);
      ImGui::EndChild();
      ImGui::SameLine();
      draw_search_bar(v);
    }

    // Panels: the timeline, the details on its right, the levels and summary below, with a
    // splitter between each; sizes dragged to are kept (fitted to the window each frame).
    const ImVec2 avail = ImGui::GetContentRegionAvail(), origin = ImGui::GetCursorPos();
    const float gap_x = ImGui::GetStyle().ItemSpacing.x, gap_y = ImGui::GetStyle().ItemSpacing.y;
    // At 1024x700 the details' GPU ops table keeps its four columns and the bottom panel's tables
    // more than five rows; the timeline keeps 360x200 at least (clamped below).
    float details_w = v.panels.details_w > 0 ? v.panels.details_w : std::clamp(avail.x * 0.3f, 330 * s, 520 * s);
    float bottom_h = v.panels.bottom_h > 0 ? v.panels.bottom_h : std::clamp(avail.y * 0.28f, 230 * s, 400 * s);
    details_w = v.panels.show_details ? std::clamp(details_w, 220 * s, std::max(220 * s, avail.x - 360 * s)) : 0;
    bottom_h = v.panels.show_levels ? std::clamp(bottom_h, 90 * s, std::max(90 * s, avail.y - 200 * s)) : 0;
    float tl_w = avail.x - (v.panels.show_details ? details_w + gap_x : 0);
    float tl_h = avail.y - (v.panels.show_levels ? bottom_h + gap_y : 0);
    ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, ImVec2(0, 0));
    ImGui::BeginChild("timeline", ImVec2(tl_w, tl_h), true, ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
    v.panels.timeline_box = {ImGui::GetWindowPos().x, ImGui::GetWindowPos().y, tl_w, tl_h};
    ImVec2 p = ImGui::GetCursorScreenPos();
    // A job: every rank's overview row above the shown rank's tracks, on one time axis.
    float overview_h = 0;
    {
      PartTimer part(v.capture.parts, "overview");
      overview_h = draw_job_overview(v, p.x, p.y, tl_w - 2, (tl_h - 2) * 0.45f);
    }
    {
      PartTimer part(v.capture.parts, "timeline");  // its draw lists; the layout is a part of its own
      draw_timeline(v, p.x, p.y + overview_h, tl_w - 2, tl_h - 2 - overview_h);
    }
    ImGui::EndChild();
    ImGui::PopStyleVar();
    if (v.panels.show_details) {
      ImGui::SetCursorPos(ImVec2(origin.x + tl_w, origin.y));
      if (splitter("##details_splitter", true, gap_x, tl_h, details_w, 220 * s, avail.x - 360 * s, true)) v.panels.details_w = details_w;
      ImGui::SetCursorPos(ImVec2(origin.x + tl_w + gap_x, origin.y));
      ImGui::BeginChild("details", ImVec2(details_w, tl_h), true);
      v.panels.details_box = {ImGui::GetWindowPos().x, ImGui::GetWindowPos().y, details_w, tl_h};
      if (v.panels.details_of != v.sel.hl.selected) ImGui::SetScrollY(0), v.panels.details_of = v.sel.hl.selected;
      v.panels.details_scroll_y = ImGui::GetScrollY();
      PartTimer part(v.capture.parts, "details");
      if (v.timeline.range.active) draw_range_details(v);  // a measured range, until it is cleared
      else if (v.sel.memory_picked) draw_memory_details(v);
      else draw_details(v);
      ImGui::EndChild();
    }
    if (v.panels.show_levels) {
      ImGui::SetCursorPos(ImVec2(origin.x, origin.y + tl_h));
      if (splitter("##bottom_splitter", false, gap_y, avail.x, bottom_h, 90 * s, avail.y - 200 * s, true)) v.panels.bottom_h = bottom_h;
      ImGui::SetCursorPos(ImVec2(origin.x, origin.y + tl_h + gap_y));
      ImGui::BeginChild("bottom", ImVec2(avail.x, bottom_h), true);
      v.panels.bottom_box = {ImGui::GetWindowPos().x, ImGui::GetWindowPos().y, avail.x, bottom_h};
      draw_bottom_tabs(v);
      ImGui::EndChild();
    }
  }
  draw_file_browser(v);
  ImGui::End();
  draw_attach(v);
  draw_search_list(v);
  if (v.loading && v.trace) draw_loading(v);  // without one, the welcome screen shows it
  draw_keymap(v);
  release_tapped_keys();  // this frame saw them down
}

}  // namespace strata::viewer
