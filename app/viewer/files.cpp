// Opening files: files dropped on the window (open_dropped), File ▸ Open with a small ImGui file browser (a click chooses an entry, Ctrl- and
// Shift-click choose several, which open as one job; Enter, Open or a double-click enters a
// directory or opens what is chosen; arrows move the choice; a typed path counts from the
// directory shown; "Open folder as job" opens every trace of the directory shown; what is
// wrong is said in the dialog), recent files kept in ~/.config/strata/recent. The same browser
// serves File ▸ Load model structure (a print(model) text for the open trace); the structure
// chosen per trace is kept in ~/.config/strata/models ("TRACE<tab>MODEL" lines), and File ▸
// Compare… (a second trace, compared with the open one).
#include "app/viewer/viewer.h"

#include "core/json_writer.h"
#include "render/elide.h"

#include <imgui.h>

#include <GLFW/glfw3.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace strata::viewer {

namespace {

fs::path config_path(const char* name) {
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  const char* home = std::getenv("HOME");
  fs::path base = xdg && *xdg ? fs::path(xdg) : home ? fs::path(home) / ".config" : fs::path();
  return base.empty() ? fs::path() : base / "strata" / name;
}
fs::path recent_path() { return config_path("recent"); }
fs::path models_path() { return config_path("models"); }

// The model structures chosen for the recent files (the others are dropped).
void save_models(const Viewer& v) {
  if (v.capture.headless) return;  // tests and screenshots leave the user's choices alone
  fs::path p = models_path();
  if (p.empty()) return;
  std::error_code ec;
  fs::create_directories(p.parent_path(), ec);
  std::ofstream out(p, std::ios::trunc);
  for (const std::string& r : v.recent)
    if (auto it = v.models.find(r); it != v.models.end()) out << r << "\t" << it->second.file << "\n";
}

void list_dir(FileBrowser& b) {
  const bool traces = b.purpose != FileBrowser::Purpose::Model;
  b.entries.clear();
  b.error.clear();
  b.picked = b.anchor = -1;
  b.traces = 0;
  std::error_code ec;
  for (fs::directory_iterator it(b.dir, fs::directory_options::skip_permission_denied, ec), end; !ec && it != end;
       it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.empty() || name[0] == '.') continue;
    bool dir = it->is_directory(ec);
    const bool trace = name.ends_with(".json") || name.ends_with(".json.gz") || name.ends_with(".gz");
    if (!dir && traces && !trace) continue;
    b.traces += !dir && trace;
    b.entries.push_back({name, dir});
  }
  if (ec) b.error = ec.message();
  std::sort(b.entries.begin(), b.entries.end(), [](const auto& a, const auto& c) {
    return a.second != c.second ? a.second : a.first < c.first;
  });
  b.chosen.assign(b.entries.size(), 0);
}

// A click (or the arrows) on entry `i`: it alone is chosen, or with Ctrl it is added or taken
// away, or with Shift the run from the anchor is chosen (File ▸ Open only: one file is wanted
// otherwise).
void choose(FileBrowser& b, int i, bool ctrl, bool shift) {
  const bool several = b.purpose == FileBrowser::Purpose::Trace;
  if (several && shift && b.anchor >= 0) {
    b.chosen.assign(b.entries.size(), 0);
    for (int k = std::min(b.anchor, i); k <= std::max(b.anchor, i); ++k) b.chosen[size_t(k)] = 1;
  } else if (several && ctrl) {
    b.chosen[size_t(i)] ^= 1;
    b.anchor = i;
  } else {
    b.chosen.assign(b.entries.size(), 0);
    b.chosen[size_t(i)] = 1;
    b.anchor = i;
  }
  b.picked = i;
  b.error.clear();
}

std::vector<std::string> chosen_paths(const FileBrowser& b, bool& any_dir) {
  std::vector<std::string> out;
  any_dir = false;
  for (size_t i = 0; i < b.entries.size(); ++i)
    if (b.chosen[i]) out.push_back((fs::path(b.dir) / b.entries[i].first).string()), any_dir = any_dir || b.entries[i].second;
  return out;
}

}  // namespace

std::string absolute_path(const std::string& path) {
  std::error_code ec;
  std::string abs = fs::absolute(path, ec).lexically_normal().string();
  return ec ? path : abs;
}

void load_recent(Viewer& v) {
  v.recent.clear();
  std::ifstream in(recent_path());
  for (std::string line; std::getline(in, line) && v.recent.size() < 12;)
    if (!line.empty()) v.recent.push_back(line);
  if (v.capture.headless) return;  // tests and screenshots see no model structure chosen in a person's session
  std::ifstream models(models_path());
  for (std::string line; std::getline(models, line);) {
    const size_t tab = line.find('\t');
    if (tab == std::string::npos || tab == 0 || tab + 1 == line.size()) continue;
    Viewer::ModelChoice& c = v.models[line.substr(0, tab)];
    if (!c.parsed) c.file = line.substr(tab + 1);  // a choice made this session stays
  }
}

bool read_model_structure(const std::string& file, std::vector<ModelModule>& tree, std::string& error) {
  std::ifstream f(file, std::ios::binary);
  std::stringstream text;
  text << f.rdbuf();
  if (!f) {
    error = "cannot read " + file;
    return false;
  }
  Result<std::vector<ModelModule>> parsed = parse_model_tree(text.str());
  if (!parsed.is_ok()) {
    error = file + ": " + parsed.status().message() + " (a model structure is the text print(model) writes)";
    return false;
  }
  tree = std::move(parsed.value());
  return true;
}

void set_model_choice(Viewer& v, const std::string& trace_path, const std::string& file, std::vector<ModelModule> tree) {
  const std::string key = absolute_path(trace_path);
  if (file.empty()) v.models.erase(key);
  else v.models[key] = {absolute_path(file), true, std::move(tree)};
  save_models(v);
}

void add_recent(Viewer& v, const std::string& path) {
  const std::string abs = absolute_path(path);
  std::error_code ec;
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

namespace {

const char* browser_title(const FileBrowser& b) {
  switch (b.purpose) {
    case FileBrowser::Purpose::Model: return "Load model structure";
    case FileBrowser::Purpose::Compare: return "Compare with another run";
    case FileBrowser::Purpose::Trace: break;
  }
  return "Open trace";
}

}  // namespace

void open_file_browser(Viewer& v) {
  FileBrowser& b = v.browser;
  std::error_code ec;
  if (b.purpose != FileBrowser::Purpose::Trace) {
    b.purpose = FileBrowser::Purpose::Trace;
    b.dir.clear();
  }
  b.open = true;
  b.path_buf[0] = 0;  // the dialog opens empty: a path left from last time is not typed into
  if (b.dir.empty()) {
    b.dir = v.trace ? fs::absolute(v.trace->model->path, ec).parent_path().string() : fs::current_path(ec).string();
    if (b.dir.empty()) b.dir = "/";
  }
  list_dir(b);
  ImGui::OpenPopup(browser_title(b));
}

void open_model_browser(Viewer& v) {
  if (!v.trace || v.job_view.job) return;
  FileBrowser& b = v.browser;
  std::error_code ec;
  b.purpose = FileBrowser::Purpose::Model;
  b.open = true;
  b.path_buf[0] = 0;
  // Where the open trace's model structure is, else the trace's directory.
  const std::string& from = v.trace->model_file.empty() ? v.trace->model->path : v.trace->model_file;
  b.dir = fs::absolute(from, ec).parent_path().string();
  if (b.dir.empty()) b.dir = fs::current_path(ec).string();
  if (b.dir.empty()) b.dir = "/";
  list_dir(b);
  ImGui::OpenPopup(browser_title(b));
}

void open_compare_browser(Viewer& v) {
  if (!v.trace) return;
  FileBrowser& b = v.browser;
  std::error_code ec;
  if (b.purpose != FileBrowser::Purpose::Compare) {  // B is usually beside A: start in A's directory
    b.purpose = FileBrowser::Purpose::Compare;
    b.dir = fs::absolute(v.trace->model->path, ec).parent_path().string();
    b.path_buf[0] = 0;
  }
  if (b.dir.empty()) b.dir = fs::current_path(ec).string();
  if (b.dir.empty()) b.dir = "/";
  b.open = true;
  list_dir(b);
  ImGui::OpenPopup(browser_title(b));
}

namespace {

// What the browser was asked to do this frame.
struct BrowserAction {
  std::string go;                // a directory to enter or a file to open, typed or chosen
  std::vector<std::string> job;  // files, or the directory shown, to open as one job
};

// Enter, Open or a double-click: the path typed, else what is chosen; nothing is said in words.
void open_chosen(FileBrowser& b, BrowserAction& a) {
  if (b.path_buf[0]) {
    a.go = b.path_buf;
    return;
  }
  bool any_dir = false;
  std::vector<std::string> paths = chosen_paths(b, any_dir);
  if (paths.empty())
    b.error = b.purpose == FileBrowser::Purpose::Trace
                  ? "Nothing is chosen: click a trace (Ctrl- or Shift-click several to open them as one job), or type a path."
                  : "Nothing is chosen: click a file, or type a path.";
  else if (paths.size() == 1) a.go = paths.front();
  else if (any_dir) b.error = "A folder is among those chosen: choose trace files only, or enter the folder and open it as a job.";
  else a.job = std::move(paths);
}

// A path typed or chosen: a directory is entered, a file opened (a model structure is parsed
// here: a bad text stays in the dialog, said in words). A typed path counts from the directory shown.
void go_to(Viewer& v, const std::string& go) {
  FileBrowser& b = v.browser;
  fs::path p(go);
  if (go.starts_with("~/") && std::getenv("HOME")) p = fs::path(std::getenv("HOME")) / go.substr(2);
  if (p.is_relative()) p = fs::path(b.dir) / p;
  p = p.lexically_normal();
  std::error_code ec;
  if (!fs::exists(p, ec)) {
    b.error = "No such file or folder: " + p.string();
    return;
  }
  if (fs::is_directory(p, ec)) {
    b.dir = p.string();
    if (b.dir.size() > 1 && b.dir.back() == '/') b.dir.pop_back();
    b.path_buf[0] = 0;
    list_dir(b);
  } else if (b.purpose == FileBrowser::Purpose::Model) {  // parsed here (small), annotated on the worker
    std::vector<ModelModule> tree;
    if (read_model_structure(p.string(), tree, b.error)) {
      b.error.clear();
      start_reannotate(v, p.string(), std::move(tree), true);
      ImGui::CloseCurrentPopup();
    }
  } else {
    if (b.purpose == FileBrowser::Purpose::Compare) start_compare(v, p.string());
    else start_load(v, p.string());
    ImGui::CloseCurrentPopup();
  }
}

// The directory's entries, the arrows on them (Shift: a run), clicks (Ctrl, Shift: several)
// and double-clicks (open).
void draw_entries(FileBrowser& b, bool typing, BrowserAction& a) {
  const ImGuiIO& io = ImGui::GetIO();
  const int count = int(b.entries.size());
  int moved = 0;
  if (!typing && count > 0) {
    if (ImGui::IsKeyPressed(GLFW_KEY_DOWN)) moved = 1;
    if (ImGui::IsKeyPressed(GLFW_KEY_UP)) moved = -1;
    if (ImGui::IsKeyPressed(GLFW_KEY_ENTER, false) || ImGui::IsKeyPressed(GLFW_KEY_KP_ENTER, false)) open_chosen(b, a);
  }
  if (moved) choose(b, std::clamp(b.picked + moved, 0, count - 1), false, io.KeyShift);
  b.entry_boxes.clear();
  ImGui::BeginChild("entries", ImVec2(0, 0), true);
  for (int i = 0; i < count; ++i) {
    const auto& [name, dir] = b.entries[size_t(i)];
    std::string label = (dir ? "[dir] " : "      ") + name;
    if (ImGui::Selectable(label.c_str(), b.chosen[size_t(i)] != 0, ImGuiSelectableFlags_AllowDoubleClick)) {
      const bool twice = ImGui::IsMouseDoubleClicked(0);
      choose(b, i, io.KeyCtrl && !twice, io.KeyShift && !twice);
      if (twice) open_chosen(b, a);
    }
    const ImVec2 lo = ImGui::GetItemRectMin(), hi = ImGui::GetItemRectMax();
    b.entry_boxes.push_back({lo.x, lo.y, hi.x - lo.x, hi.y - lo.y});
    if (moved && i == b.picked) ImGui::SetScrollHereY();
  }
  ImGui::EndChild();
}

}  // namespace

void open_dropped(Viewer& v, const std::vector<std::string>& paths, bool compare) {
  if (paths.empty()) return;
  std::error_code ec;
  if (compare && v.trace && paths.size() == 1 && !fs::is_directory(paths[0], ec)) start_compare(v, paths[0]);
  else if (paths.size() > 1 || fs::is_directory(paths[0], ec)) start_job_load(v, paths);
  else start_load(v, paths[0]);
}

void draw_file_browser(Viewer& v) {
  FileBrowser& b = v.browser;
  const bool model = b.purpose == FileBrowser::Purpose::Model, compare = b.purpose == FileBrowser::Purpose::Compare;
  const char* title = browser_title(b);
  if (b.open) {
    ImGui::OpenPopup(title);
    b.open = false;
  }
  place_dialog(720 * v.scale, 480 * v.scale, 0, 0, true);
  if (!ImGui::BeginPopupModal(title, nullptr, ImGuiWindowFlags_NoSavedSettings)) return;
  note_dialog(v, title);
  if ((model || compare) && !v.trace) {  // the trace went away meanwhile
    ImGui::CloseCurrentPopup();
    ImGui::EndPopup();
    return;
  }
  if (model)
    ImGui::TextWrapped("The text print(model) writes, for the layers of %s to take its attribute paths (layer4.1.conv2)",
                       fs::path(v.trace->model->path).filename().c_str());
  if (compare) ImGui::TextWrapped("Run B, compared with the open trace (A): %s", fs::path(v.trace->model->path).filename().c_str());
  const std::string shown_dir = render::elide_middle(b.dir, ImGui::GetContentRegionAvail().x, v.metrics);
  ImGui::TextDisabled("%s", shown_dir.c_str());
  BrowserAction a;
  if (ImGui::Button("Up")) a.go = fs::path(b.dir).parent_path().string();
  ImGui::SameLine();
  ImGui::SetNextItemWidth(-160 * v.scale);
  // A path is usually typed or pasted for a model; for a trace, letters typed while the list has
  // the keys start the path (as in a desktop file chooser). The box takes keys from the frame
  // after it is focused, so those letters are put in by hand and the box, which chooses all of
  // its text when focused, is told to put the cursor after them.
  const bool type_ahead = !model && !ImGui::IsAnyItemActive() && !ImGui::GetIO().InputQueueCharacters.empty();
  if (type_ahead) {
    std::string typed = b.path_buf;
    for (ImWchar c : ImGui::GetIO().InputQueueCharacters)
      if (c >= 32 && c < 127) typed += char(c);
    std::snprintf(b.path_buf, sizeof b.path_buf, "%s", typed.c_str());
    b.typed_ahead = true;
  }
  if ((model && ImGui::IsWindowAppearing()) || type_ahead) ImGui::SetKeyboardFocusHere();
  // Empty until typed into, and all of it chosen on a click: a click never lands inside a path
  // to be typed over.
  auto cursor_to_end = [](ImGuiInputTextCallbackData* d) {
    bool& pending = *static_cast<bool*>(d->UserData);
    if (pending) d->SelectionStart = d->SelectionEnd = d->CursorPos = d->BufTextLen, pending = false;
    return 0;
  };
  const ImGuiInputTextFlags flags = ImGuiInputTextFlags_EnterReturnsTrue |
                                    (b.typed_ahead ? ImGuiInputTextFlags_CallbackAlways : ImGuiInputTextFlags_AutoSelectAll);
  const bool typed_enter = ImGui::InputTextWithHint("##path", "or type a path", b.path_buf, sizeof b.path_buf, flags,
                                                    cursor_to_end, &b.typed_ahead);
  const bool typing = ImGui::IsItemActive();
  ImGui::SameLine();
  if (ImGui::Button(model ? "Load" : compare ? "Compare" : "Open") || typed_enter) open_chosen(b, a);
  ImGui::SameLine();
  if (ImGui::Button("Cancel")) ImGui::CloseCurrentPopup();
  if (!model && !compare && b.traces >= 2) {
    if (ImGui::Button(("Open folder as job (" + std::to_string(b.traces) + " traces)").c_str())) a.job = {b.dir};
    ImGui::SameLine();
    ImGui::TextDisabled("or Ctrl- and Shift-click traces to open them as one job");
  }
  if (!b.error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1, 0.5f, 0.4f, 1));
    text_wrapped(v, b.error);
    ImGui::PopStyleColor();
  }
  draw_entries(b, typing || typed_enter, a);  // Enter in the path box is the box's
  if (!a.job.empty()) {
    start_job_load(v, a.job);
    ImGui::CloseCurrentPopup();
  } else if (!a.go.empty()) {
    go_to(v, a.go);
  }
  ImGui::EndPopup();
}

void write_browser_fields(JsonWriter& j, const Viewer& v) {
  const FileBrowser& b = v.browser;
  j.field("dir", std::string_view(b.dir)).field("path", std::string_view(b.path_buf)).field("error", std::string_view(b.error));
  j.field("traces", uint64_t(b.traces));
  j.key("entries").begin_array();
  for (size_t i = 0; i < b.entries.size(); ++i) {
    j.begin_object().field("name", std::string_view(b.entries[i].first)).field("dir", b.entries[i].second);
    j.field("chosen", b.chosen[i] != 0);
    if (i < b.entry_boxes.size()) write_box(j, "box", b.entry_boxes[i]);
    j.end_object();
  }
  j.end_array();
}

}  // namespace strata::viewer
