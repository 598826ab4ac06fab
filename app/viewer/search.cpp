// Search over event names (`/` or Ctrl+F): case-insensitive substring, updated as the
// query is typed, with a match count and next/previous in time order. Matching runs on a
// worker thread (render::find_by_name); a new query supersedes the running one.
#include "app/viewer/viewer.h"

#include <imgui.h>

#include <GLFW/glfw3.h>

namespace strata::viewer {

SearchJob::~SearchJob() {
  cancel = true;
  if (worker.joinable()) worker.join();
}

namespace {

void start_search(Viewer& v) {
  SearchState& s = v.search;
  if (s.job) {
    s.job->cancel = true;
    s.retired.push_back(std::move(s.job));
  }
  s.current = -1;
  if (!v.trace || s.query[0] == 0) {
    s.ran = s.query;
    s.matches.clear();
    s.by_time.clear();
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

}  // namespace

void poll_search(Viewer& v) {
  SearchState& s = v.search;
  std::erase_if(s.retired, [](const std::unique_ptr<SearchJob>& j) { return j->done.load(); });
  if (!s.job || !s.job->done) return;
  s.job->worker.join();
  s.ran = s.job->query;
  s.matches = std::move(s.job->result.matches);
  s.by_time = std::move(s.job->result.by_time);
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
  s.ran.clear();  // the query stays: it runs again on the next model
  s.matches.clear();
  s.by_time.clear();
  s.current = -1;
  s.pending_step = 0;
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
  if (active && ImGui::IsKeyPressed(GLFW_KEY_ESCAPE, false)) s.query[0] = 0;
  bool stale = s.job ? s.job->query != s.query : s.ran != s.query;
  if (stale) start_search(v);
  if (enter) {
    step(v, io.KeyShift ? -1 : 1);
    s.focus_request = true;  // keep typing / pressing Enter
  }
  ImGui::SameLine();
  if (ImGui::ArrowButton("##prev", ImGuiDir_Left)) step(v, -1);
  ImGui::SameLine();
  if (ImGui::ArrowButton("##next", ImGuiDir_Right)) step(v, 1);
  ImGui::SameLine();
  if (s.job) ImGui::TextDisabled("searching...");
  else if (s.ran.empty()) ImGui::TextDisabled("          ");
  else if (s.matches.empty()) ImGui::TextDisabled("no matches");
  else if (s.current >= 0) ImGui::Text("%d of %zu", s.current + 1, s.matches.size());
  else ImGui::Text("%zu matches", s.matches.size());
}

}  // namespace strata::viewer
