// Search over event names (`/` or Ctrl+F): case-insensitive substring, match count,
// next/previous in time order.
#include "app/viewer/viewer.h"

#include <imgui.h>

#include <GLFW/glfw3.h>

#include <algorithm>
#include <cctype>

namespace strata::viewer {

namespace {

bool contains_ci(std::string_view hay, std::string_view needle) {
  if (needle.size() > hay.size()) return false;
  auto lower = [](char c) { return char(std::tolower((unsigned char)c)); };
  for (size_t i = 0; i + needle.size() <= hay.size(); ++i) {
    size_t k = 0;
    while (k < needle.size() && lower(hay[i + k]) == lower(needle[k])) ++k;
    if (k == needle.size()) return true;
  }
  return false;
}

}  // namespace

void run_search(Viewer& v) {
  SearchState& s = v.search;
  s.matches.clear();
  s.by_time.clear();
  s.current = -1;
  s.ran = s.query;
  if (!v.trace || s.ran.empty()) return;
  const TraceModel& m = *v.trace->model;
  // Match distinct names once, then pick the events carrying them.
  std::vector<uint8_t> hit(m.strings.size(), 0);
  for (StrId i = 0; i < m.strings.size(); ++i) hit[i] = contains_ci(m.strings.view(i), s.ran) ? 1 : 0;
  for (EventId e = 0; e < m.ev.size(); ++e)
    if (m.ev.name[e] < hit.size() && hit[m.ev.name[e]]) s.matches.push_back(e);
  // Navigation in time order (a copy only when it is affordable).
  if (s.matches.size() <= (1u << 20)) {
    s.by_time = s.matches;
    std::stable_sort(s.by_time.begin(), s.by_time.end(), [&](EventId a, EventId b) { return m.ev.start[a] < m.ev.start[b]; });
  }
}

void search_step(Viewer& v, int dir) {
  SearchState& s = v.search;
  const std::vector<EventId>& order = s.by_time.empty() ? s.matches : s.by_time;
  if (order.empty()) return;
  int n = int(order.size());
  s.current = s.current < 0 ? (dir > 0 ? 0 : n - 1) : ((s.current + dir) % n + n) % n;
  focus_on(v, render::ItemRef::event(order[size_t(s.current)]));
}

void draw_search_bar(Viewer& v) {
  SearchState& s = v.search;
  ImGuiIO& io = ImGui::GetIO();
  if (!io.WantTextInput && (ImGui::IsKeyPressed(GLFW_KEY_SLASH, false) || (io.KeyCtrl && ImGui::IsKeyPressed(GLFW_KEY_F, false))))
    s.focus_request = true;
  if (s.focus_request) {
    ImGui::SetKeyboardFocusHere();
    s.focus_request = false;
  }
  ImGui::SetNextItemWidth(220 * v.scale);
  bool enter = ImGui::InputTextWithHint("##search", "Search names  ( / )", s.query, sizeof s.query,
                                        ImGuiInputTextFlags_EnterReturnsTrue);
  bool active = ImGui::IsItemActive();
  if (enter) {
    if (s.ran != s.query) run_search(v);
    search_step(v, io.KeyShift ? -1 : 1);
    s.focus_request = true;  // keep typing / pressing Enter
  }
  if (active && ImGui::IsKeyPressed(GLFW_KEY_ESCAPE, false)) {
    s.query[0] = 0;
    run_search(v);
  }
  ImGui::SameLine();
  if (ImGui::ArrowButton("##prev", ImGuiDir_Left)) {
    if (s.ran != s.query) run_search(v);
    search_step(v, -1);
  }
  ImGui::SameLine();
  if (ImGui::ArrowButton("##next", ImGuiDir_Right)) {
    if (s.ran != s.query) run_search(v);
    search_step(v, 1);
  }
  ImGui::SameLine();
  if (!s.ran.empty()) {
    if (s.matches.empty()) ImGui::TextDisabled("no matches");
    else if (s.current >= 0) ImGui::Text("%d of %zu", s.current + 1, s.matches.size());
    else ImGui::Text("%zu matches", s.matches.size());
  } else {
    ImGui::TextDisabled("          ");
  }
}

}  // namespace strata::viewer
