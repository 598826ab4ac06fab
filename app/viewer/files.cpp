// Opening files: File ▸ Open with a small ImGui file browser (a click picks an entry, Enter,
// Open or a double-click enters a directory or opens a file, arrows move the pick; a typed path
// counts from the directory shown), recent files kept in ~/.config/strata/recent.
#include "app/viewer/viewer.h"

#include "render/elide.h"

#include <imgui.h>

#include <GLFW/glfw3.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace strata::viewer {

namespace {

fs::path recent_path() {
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  const char* home = std::getenv("HOME");
  fs::path base = xdg && *xdg ? fs::path(xdg) : home ? fs::path(home) / ".config" : fs::path();
  return base.empty() ? fs::path() : base / "strata" / "recent";
}

void list_dir(FileBrowser& b) {
  b.entries.clear();
  b.error.clear();
  b.picked = -1;
  std::error_code ec;
  for (fs::directory_iterator it(b.dir, fs::directory_options::skip_permission_denied, ec), end; !ec && it != end;
       it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.empty() || name[0] == '.') continue;
    bool dir = it->is_directory(ec);
    if (!dir && !(name.ends_with(".json") || name.ends_with(".json.gz") || name.ends_with(".gz"))) continue;
    b.entries.push_back({name, dir});
  }
  if (ec) b.error = ec.message();
  std::sort(b.entries.begin(), b.entries.end(), [](const auto& a, const auto& c) {
    return a.second != c.second ? a.second : a.first < c.first;
  });
}

// Picks entry `i`: its path goes into the path box, for Enter or Open.
void pick(FileBrowser& b, int i) {
  b.picked = i;
  std::snprintf(b.path_buf, sizeof b.path_buf, "%s", (fs::path(b.dir) / b.entries[size_t(i)].first).c_str());
}

}  // namespace

void load_recent(Viewer& v) {
  v.recent.clear();
  std::ifstream in(recent_path());
  for (std::string line; std::getline(in, line) && v.recent.size() < 12;)
    if (!line.empty()) v.recent.push_back(line);
}

void add_recent(Viewer& v, const std::string& path) {
  std::error_code ec;
  std::string abs = fs::absolute(path, ec).lexically_normal().string();
  if (ec) abs = path;
  v.recent.erase(std::remove(v.recent.begin(), v.recent.end(), abs), v.recent.end());
  v.recent.insert(v.recent.begin(), abs);
  if (v.recent.size() > 12) v.recent.resize(12);
  if (v.capture.headless) return;  // tests and screenshots leave the user's list alone
  fs::path p = recent_path();
  if (p.empty()) return;
  fs::create_directories(p.parent_path(), ec);
  std::ofstream out(p, std::ios::trunc);
  for (const std::string& r : v.recent) out << r << "\n";
}

void open_file_browser(Viewer& v) {
  FileBrowser& b = v.browser;
  b.open = true;
  if (b.dir.empty()) {
    std::error_code ec;
    b.dir = v.trace ? fs::absolute(v.trace->model->path, ec).parent_path().string() : fs::current_path(ec).string();
    if (b.dir.empty()) b.dir = "/";
  }
  list_dir(b);
  ImGui::OpenPopup("Open trace");
}

void draw_file_browser(Viewer& v) {
  FileBrowser& b = v.browser;
  if (b.open) {
    ImGui::OpenPopup("Open trace");
    b.open = false;
  }
  place_dialog(720 * v.scale, 480 * v.scale, 0, 0, true);
  if (!ImGui::BeginPopupModal("Open trace", nullptr, ImGuiWindowFlags_NoSavedSettings)) return;
  note_dialog(v, "Open trace");
  const std::string shown_dir = render::elide_middle(b.dir, ImGui::GetContentRegionAvail().x, v.metrics);
  ImGui::TextDisabled("%s", shown_dir.c_str());
  std::string go;  // a directory to enter or a file to open
  if (ImGui::Button("Up")) go = fs::path(b.dir).parent_path().string();
  ImGui::SameLine();
  ImGui::SetNextItemWidth(-160 * v.scale);
  const bool typed_enter = ImGui::InputTextWithHint("##path", "or type a path", b.path_buf, sizeof b.path_buf,
                                                    ImGuiInputTextFlags_EnterReturnsTrue);
  const bool typing = ImGui::IsItemActive();
  ImGui::SameLine();
  bool open_path = ImGui::Button("Open") || typed_enter;
  ImGui::SameLine();
  if (ImGui::Button("Cancel")) ImGui::CloseCurrentPopup();
  if (!b.error.empty()) ImGui::TextColored(ImVec4(1, 0.5f, 0.4f, 1), "%s", b.error.c_str());
  // Arrows move through the entries and Enter opens the one picked, as in a file manager.
  const int count = int(b.entries.size());
  int moved = 0;
  if (!typing && count > 0) {
    if (ImGui::IsKeyPressed(GLFW_KEY_DOWN)) moved = 1;
    if (ImGui::IsKeyPressed(GLFW_KEY_UP)) moved = -1;
    if (ImGui::IsKeyPressed(GLFW_KEY_ENTER, false) || ImGui::IsKeyPressed(GLFW_KEY_KP_ENTER, false)) open_path = true;
  }
  if (moved) {
    b.picked = std::clamp(b.picked + moved, 0, count - 1);
    pick(b, b.picked);
  }
  ImGui::BeginChild("entries", ImVec2(0, 0), true);
  for (int i = 0; i < count; ++i) {
    const auto& [name, dir] = b.entries[size_t(i)];
    std::string label = (dir ? "[dir] " : "      ") + name;
    if (ImGui::Selectable(label.c_str(), i == b.picked, ImGuiSelectableFlags_AllowDoubleClick)) {
      pick(b, i);
      if (ImGui::IsMouseDoubleClicked(0)) open_path = true;
    }
    if (moved && i == b.picked) ImGui::SetScrollHereY();
  }
  ImGui::EndChild();
  if (open_path && b.path_buf[0]) go = b.path_buf;
  if (!go.empty()) {
    // A typed path counts from the directory shown; a directory is entered, a file opened.
    fs::path p(go);
    if (go.starts_with("~/") && std::getenv("HOME")) p = fs::path(std::getenv("HOME")) / go.substr(2);
    if (p.is_relative()) p = fs::path(b.dir) / p;
    p = p.lexically_normal();
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      b.dir = p.string();
      if (b.dir.size() > 1 && b.dir.back() == '/') b.dir.pop_back();
      b.path_buf[0] = 0;
      list_dir(b);
    } else {
      start_load(v, p.string());
      ImGui::CloseCurrentPopup();
    }
  }
  ImGui::EndPopup();
}

}  // namespace strata::viewer
