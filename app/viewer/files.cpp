// Opening files: File ▸ Open with a small ImGui file browser, recent files kept in
// ~/.config/strata/recent.
#include "app/viewer/viewer.h"

#include <imgui.h>

#include <algorithm>
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
    b.dir = v.trace ? fs::path(v.trace->model->path).parent_path().string() : fs::current_path(ec).string();
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
  ImVec2 size(720 * v.scale, 480 * v.scale);
  ImGui::SetNextWindowSize(size, ImGuiCond_Appearing);
  if (!ImGui::BeginPopupModal("Open trace", nullptr)) return;
  ImGui::TextDisabled("%s", b.dir.c_str());
  if (ImGui::Button("Up")) {
    b.dir = fs::path(b.dir).parent_path().string();
    if (b.dir.empty()) b.dir = "/";
    list_dir(b);
  }
  ImGui::SameLine();
  ImGui::SetNextItemWidth(-160 * v.scale);
  bool enter = ImGui::InputTextWithHint("##path", "or type a path", b.path_buf, sizeof b.path_buf,
                                        ImGuiInputTextFlags_EnterReturnsTrue);
  ImGui::SameLine();
  bool open_typed = ImGui::Button("Open") || enter;
  ImGui::SameLine();
  if (ImGui::Button("Cancel")) ImGui::CloseCurrentPopup();
  if (!b.error.empty()) ImGui::TextColored(ImVec4(1, 0.5f, 0.4f, 1), "%s", b.error.c_str());
  ImGui::BeginChild("entries", ImVec2(0, 0), true);
  std::string chosen;
  for (const auto& [name, dir] : b.entries) {
    std::string label = (dir ? "[dir] " : "      ") + name;
    if (ImGui::Selectable(label.c_str(), false, ImGuiSelectableFlags_AllowDoubleClick)) {
      fs::path p = fs::path(b.dir) / name;
      if (dir) {
        b.dir = p.string();
        list_dir(b);
        break;
      }
      std::snprintf(b.path_buf, sizeof b.path_buf, "%s", p.c_str());
      if (ImGui::IsMouseDoubleClicked(0)) chosen = p.string();
    }
  }
  ImGui::EndChild();
  if (open_typed && b.path_buf[0]) {
    std::error_code ec;
    if (fs::is_directory(b.path_buf, ec)) {
      b.dir = b.path_buf;
      list_dir(b);
    } else {
      chosen = b.path_buf;
    }
  }
  if (!chosen.empty()) {
    start_load(v, chosen);
    ImGui::CloseCurrentPopup();
  }
  ImGui::EndPopup();
}

}  // namespace strata::viewer
