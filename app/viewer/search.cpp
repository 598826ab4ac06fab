// Search over event names (`/` or Ctrl+F): case-insensitive substring, updated as the
// query is typed, with a match count and next/previous in time order, and a results list
// (per name: count and time; a click goes to its longest occurrence and steps through its
// occurrences only). Matching runs on a worker thread (render::find_by_name); a new query
// supersedes the running one. Each file keeps its own query for the session.
#include "app/viewer/viewer.h"

#include "render/elide.h"

#include <imgui.h>

#include <GLFW/glfw3.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

namespace strata::viewer {

SearchJob::~SearchJob() {
  cancel = true;
  if (worker.joinable()) worker.join();
}

namespace {

// Back to every match after a name was picked from the list.
void widen(SearchState& s) {
  if (s.narrowed == kNoStr) return;
  s.matches = std::move(s.all.matches);
  s.by_time = std::move(s.all.by_time);
  s.narrowed = kNoStr;
  s.current = -1;
}

// Only the occurrences of `name`; every match waits in `all`.
void narrow(Viewer& v, StrId name) {
  SearchState& s = v.search;
  if (s.narrowed == kNoStr) {
    s.all.matches = std::move(s.matches);
    s.all.by_time = std::move(s.by_time);
  }
  s.narrowed = name;
  s.by_time = render::occurrences(*v.trace->model, s.all, name);
  s.matches = s.by_time;
  std::sort(s.matches.begin(), s.matches.end());
  s.current = -1;
}

void start_search(Viewer& v) {
  SearchState& s = v.search;
  if (s.job) {
    s.job->cancel = true;
    s.retired.push_back(std::move(s.job));
  }
  widen(s);
  s.current = -1;
  if (!v.trace || s.query[0] == 0) {
    s.ran = s.query;
    s.matches.clear();
    s.by_time.clear();
    s.names.clear();
    s.list_open = false;
    return;
  }
  auto job = std::make_unique<SearchJob>();
  job->query = s.query;
  const TraceModel* m = v.trace->model.get();
  SearchJob* j = job.get();
  j->worker = std::thread([m, j] {
    j->result = render::find_by_name(*m, j->query, &j->cancel);
    j->done = true;
  });
  s.job = std::move(job);
}

void step(Viewer& v, int dir) {
  SearchState& s = v.search;
  if (s.job) {  // the result is on its way: step when it arrives
    s.pending_step = dir;
    return;
  }
  const std::vector<EventId>& order = s.by_time.empty() ? s.matches : s.by_time;
  if (order.empty()) return;
  int n = int(order.size());
  s.current = s.current < 0 ? (dir > 0 ? 0 : n - 1) : ((s.current + dir) % n + n) % n;
  focus_on(v, render::ItemRef::event(order[size_t(s.current)]));
}

// What a query belongs to: the open file, or the open job (its ranks share one), however
// its path was written.
std::string owner_of(const Viewer& v) {
  const bool job = v.job_view.job && !v.job_view.job->ranks.empty();
  if (!job && !v.trace) return {};
  const std::string& path = job ? v.job_view.job->ranks.front().file.path : v.trace->model->path;
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::absolute(path, ec).lexically_normal();
  return (job ? "job " : "") + (ec ? path : abs.string());
}

// Another file was opened: keep the query of the one left, start from the new one's own.
void follow_file(Viewer& v) {
  SearchState& s = v.search;
  const std::string owner = owner_of(v);
  if (owner == s.file) return;
  if (!s.file.empty()) s.kept[s.file] = s.query;
  s.file = owner;
  auto it = s.kept.find(owner);
  std::snprintf(s.query, sizeof s.query, "%s", it == s.kept.end() ? "" : it->second.c_str());
  s.list_open = false;
}

}  // namespace

void poll_search(Viewer& v) {
  follow_file(v);  // before anyone asks whether a search is due: a file brings its query back
  SearchState& s = v.search;
  std::erase_if(s.retired, [](const std::unique_ptr<SearchJob>& j) { return j->done.load(); });
  if (!s.job || !s.job->done) return;
  s.job->worker.join();
  s.ran = s.job->query;
  s.matches = std::move(s.job->result.matches);
  s.by_time = std::move(s.job->result.by_time);
  s.names = std::move(s.job->result.names);
  s.job.reset();
  if (s.pending_step) {
    step(v, s.pending_step);
    s.pending_step = 0;
  }
}

void reset_search(Viewer& v) {
  SearchState& s = v.search;
  s.job.reset();
  s.retired.clear();
  s.ran.clear();  // the query stays: it runs again on the next model of the same file
  s.matches.clear();
  s.by_time.clear();
  s.names.clear();
  s.all = {};
  s.narrowed = kNoStr;
  s.current = -1;
  s.pending_step = 0;
}

bool close_search_list(Viewer& v) {
  const bool was = v.search.list_open;
  v.search.list_open = false;
  return was;
}

void draw_search_bar(Viewer& v) {
  SearchState& s = v.search;
  ImGuiIO& io = ImGui::GetIO();
  follow_file(v);
  // Not while a dialog is open: a path typed into File ▸ Open would land in the search box.
  if (!any_popup_open() && (typed('/') || (!io.WantTextInput && io.KeyCtrl && ImGui::IsKeyPressed(GLFW_KEY_F, false))))
    s.focus_request = true;
  if (s.focus_request) {
    ImGui::SetKeyboardFocusHere();
    s.focus_request = false;
  }
  // Esc in the box clears the search (Dear ImGui lets go of the box on the same key).
  const bool esc = s.was_active && ImGui::IsKeyPressed(GLFW_KEY_ESCAPE, false);
  ImGui::SetNextItemWidth(220 * v.scale);
  bool enter = ImGui::InputTextWithHint("##search", "Search names  ( / )", s.query, sizeof s.query,
                                        ImGuiInputTextFlags_EnterReturnsTrue);
  const ImVec2 lo = ImGui::GetItemRectMin();
  s.was_active = ImGui::IsItemActive();
  if (ImGui::IsItemClicked() && s.query[0]) s.list_open = true;
  if (esc) s.query[0] = 0, s.list_open = false;
  if (ImGui::IsItemEdited()) s.list_open = s.query[0] != 0;  // typing shows the list; a file's kept query does not
  bool stale = s.job ? s.job->query != s.query : s.ran != s.query;
  if (stale) start_search(v);
  if (enter) {
    step(v, io.KeyShift ? -1 : 1);
    s.list_open = false;       // the list would hide what Enter went to
    s.focus_request = true;    // keep typing / pressing Enter
  }
  ImGui::SameLine();
  if (ImGui::ArrowButton("##prev", ImGuiDir_Left)) step(v, -1);
  ImGui::SameLine();
  if (ImGui::ArrowButton("##next", ImGuiDir_Right)) step(v, 1);
  ImGui::SameLine();
  char status[96];
  if (s.current >= 0) std::snprintf(status, sizeof status, "%d of %zu \xE2\x96\xBE##results", s.current + 1, s.matches.size());
  else std::snprintf(status, sizeof status, "%zu match%s \xE2\x96\xBE##results", s.matches.size(), s.matches.size() == 1 ? "" : "es");
  if (s.job) ImGui::TextDisabled("searching...");
  else if (s.ran.empty()) ImGui::TextDisabled("          ");
  else if (s.matches.empty() && s.narrowed == kNoStr) ImGui::TextDisabled("no matches");
  else if (ImGui::SmallButton(status)) s.list_open = !s.list_open;
  else if (ImGui::IsItemHovered()) ImGui::SetTooltip("The names that matched, with their counts and time");
  const ImVec2 hi = ImGui::GetItemRectMax();
  s.box = {lo.x, lo.y, hi.x - lo.x, hi.y - lo.y};
}

void draw_search_list(Viewer& v) {
  SearchState& s = v.search;
  s.rows.clear();
  if (!s.list_open || !v.trace || s.job || s.ran.empty() || s.names.empty()) return;
  const TraceModel& m = *v.trace->model;
  const ImGuiIO& io = ImGui::GetIO();
  const float sc = v.scale, margin = 8 * sc;
  const float w = std::min(560 * sc, io.DisplaySize.x - 2 * margin);
  const float row_h = ImGui::GetTextLineHeightWithSpacing();
  const float rows = float(std::min<size_t>(s.names.size() + 1, 16)) + 2.5f;
  const float h = std::min(rows * row_h + 2 * ImGui::GetStyle().WindowPadding.y, io.DisplaySize.y - s.box.y - s.box.h - 2 * margin);
  ImGui::SetNextWindowPos(ImVec2(std::clamp(s.box.x + s.box.w - w, margin, io.DisplaySize.x - w - margin), s.box.y + s.box.h + 2 * sc));
  ImGui::SetNextWindowSize(ImVec2(w, std::max(h, 4 * row_h)));
  if (!begin_dialog(v, "search results", nullptr,
                    ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoFocusOnAppearing | ImGuiWindowFlags_NoNav))
    return;
  ImGui::TextDisabled("%zu name%s; click one: its longest, then Enter steps through it", s.names.size(), s.names.size() == 1 ? "" : "s");
  StrId pick = kNoStr;
  bool pick_all = false;
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY | ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_BordersInnerV;
  if (ImGui::BeginTable("names", 3, flags)) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("Name", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableSetupColumn("Count");
    ImGui::TableSetupColumn("Time");
    ImGui::TableHeadersRow();
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    if (ImGui::Selectable("All names##all", s.narrowed == kNoStr, ImGuiSelectableFlags_SpanAllColumns)) pick_all = true;
    ImGui::TableNextColumn();
    ImGui::Text("%zu", s.narrowed == kNoStr ? s.matches.size() : s.all.matches.size());
    ImGuiListClipper clip;
    clip.Begin(int(s.names.size()));
    while (clip.Step()) {
      for (int i = clip.DisplayStart; i < clip.DisplayEnd; ++i) {
        const render::NameMatches& n = s.names[size_t(i)];
        const std::string_view name = m.strings.view(n.name);
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        // Drawn by hand after an empty label: names may hold "##", an id separator to ImGui.
        ImGui::PushID(i);
        const ImVec2 at = ImGui::GetCursorScreenPos();
        const float room = ImGui::GetContentRegionAvail().x;
        if (ImGui::Selectable("##name", s.narrowed == n.name, ImGuiSelectableFlags_SpanAllColumns)) pick = n.name;
        const bool hovered = ImGui::IsItemHovered();
        const ImVec2 row_lo = ImGui::GetItemRectMin(), row_hi = ImGui::GetItemRectMax();
        s.rows.push_back({n.name, {row_lo.x, row_lo.y, row_hi.x - row_lo.x, row_hi.y - row_lo.y}});
        ImGui::PopID();
        const std::string shown_name = render::elide_middle(name.substr(0, 400), room, v.metrics);
        ImGui::GetWindowDrawList()->AddText(at, ImGui::GetColorU32(ImGuiCol_Text), shown_name.c_str());
        if (hovered && shown_name.size() != name.size())
          tooltip(v, "%.*s", int(std::min<size_t>(name.size(), 400)), name.data());
        ImGui::TableNextColumn();
        ImGui::Text("%u", n.count);
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(format_duration(n.total).c_str());
      }
    }
    ImGui::EndTable();
  }
  // (A row being pressed is the active item: it must not count as elsewhere.)
  const bool inside = ImGui::IsWindowHovered(ImGuiHoveredFlags_RootAndChildWindows | ImGuiHoveredFlags_AllowWhenBlockedByActiveItem);
  ImGui::End();
  // A pick gives the keyboard back to the search box, so that Enter steps through what was picked
  // (the click had given it to the list).
  if (pick_all) widen(s), s.list_open = false, s.focus_request = true;
  if (pick != kNoStr) {
    s.focus_request = true;
    narrow(v, pick);
    const auto it = std::find_if(s.names.begin(), s.names.end(), [&](const render::NameMatches& n) { return n.name == pick; });
    const auto longest = std::find(s.by_time.begin(), s.by_time.end(), it->longest);
    s.current = int(longest - s.by_time.begin());
    focus_on(v, render::ItemRef::event(it->longest));
    s.list_open = false;
  }
  // A click anywhere else closes the list; a click on the search bar keeps it.
  const ImVec2 mp = io.MousePos;
  const bool in_box = mp.x >= s.box.x && mp.x < s.box.x + s.box.w && mp.y >= s.box.y && mp.y < s.box.y + s.box.h;
  if (ImGui::IsMouseClicked(ImGuiMouseButton_Left) && !inside && !in_box) s.list_open = false;
}

}  // namespace strata::viewer
