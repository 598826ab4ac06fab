// Headless runs press keys and use the mouse as a person would (`strata view FILE --keys "?,Esc"`):
// each goes through the window's key, character, button and wheel events (Dear ImGui's GLFW
// backend), a frame with it down and one after it is let go, so the screenshot and the layout
// dump show what they did. Besides keys and text:
//   Click:X:Y, DoubleClick:X:Y  the left button at window pixel (X, Y), with Ctrl+/Shift+ as wanted
//   Move:X:Y                    the pointer there (what it hovers shows its tooltip)
//   Wheel:X:Y:N                 N notches of the wheel there (negative: towards the person)
//   Tap+KEY                     down and up before the next frame, as a quick tap or xdotool does
//   Drop:PATH                   PATH dropped on the window (Shift+Drop:PATH: with Shift held)
#include "app/viewer/viewer.h"

#include <imgui.h>
#include <imgui_impl_glfw.h>

#include <GLFW/glfw3.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

namespace strata::viewer {

namespace {

struct NamedKey {
  const char* name;
  int key;
};
constexpr NamedKey kNamed[] = {{"Esc", GLFW_KEY_ESCAPE},        {"Enter", GLFW_KEY_ENTER},   {"Backspace", GLFW_KEY_BACKSPACE},
                               {"Tab", GLFW_KEY_TAB},           {"Left", GLFW_KEY_LEFT},     {"Right", GLFW_KEY_RIGHT},
                               {"Up", GLFW_KEY_UP},             {"Down", GLFW_KEY_DOWN},     {"Space", GLFW_KEY_SPACE}};

// The GLFW key that types `c` on a US layout, and whether it needs Shift.
int key_of(char c, bool& shift) {
  shift = std::isupper(static_cast<unsigned char>(c)) || c == '?';
  if (std::isalpha(static_cast<unsigned char>(c))) return GLFW_KEY_A + (std::toupper(static_cast<unsigned char>(c)) - 'A');
  if (std::isdigit(static_cast<unsigned char>(c))) return GLFW_KEY_0 + (c - '0');
  if (c == '/' || c == '?') return GLFW_KEY_SLASH;
  if (c == '.') return GLFW_KEY_PERIOD;
  if (c == '-' || c == '_') return shift = c == '_', GLFW_KEY_MINUS;
  if (c == ' ') return GLFW_KEY_SPACE;
  return GLFW_KEY_UNKNOWN;
}

void frames(Viewer& v, int n) {
  for (int i = 0; i < n; ++i) {
    glfwPollEvents();
    poll_load(v);
    poll_search(v);
    frame(v);
  }
}

constexpr int kModifierKeys[][2] = {{GLFW_MOD_CONTROL, GLFW_KEY_LEFT_CONTROL}, {GLFW_MOD_SHIFT, GLFW_KEY_LEFT_SHIFT}, {GLFW_MOD_ALT, GLFW_KEY_LEFT_ALT}};

void modifiers(Viewer& v, int mods, int action) {
  for (const auto& [mod, k] : kModifierKeys)
    if (mods & mod) key_event(v.window, k, 0, action, action == GLFW_PRESS ? mods : 0);
}

// One key with its modifiers: down for a frame, then up for a frame (`tap`: down and up before
// the frame); `c` is what it types.
void press(Viewer& v, int key, int mods, unsigned c, bool tap) {
  GLFWwindow* w = v.window;
  modifiers(v, mods, GLFW_PRESS);
  if (key != GLFW_KEY_UNKNOWN) key_event(w, key, 0, GLFW_PRESS, mods);
  if (c) ImGui_ImplGlfw_CharCallback(w, c);
  if (!tap) frames(v, 1);
  if (key != GLFW_KEY_UNKNOWN) key_event(w, key, 0, GLFW_RELEASE, mods);
  modifiers(v, mods, GLFW_RELEASE);
  frames(v, 2);
}

// Click:X:Y, DoubleClick:X:Y, Move:X:Y, Wheel:X:Y:N; false when `token` is none of them.
bool mouse(Viewer& v, const std::string& token, int mods) {
  char what[16] = {};
  float x = 0, y = 0, notches = 0;
  const int n = std::sscanf(token.c_str(), "%15[A-Za-z]:%f:%f:%f", what, &x, &y, &notches);
  const std::string_view verb = what;
  if (n < 3 || (verb != "Click" && verb != "DoubleClick" && verb != "Move" && verb != "Wheel")) return false;
  v.capture.pointer = true;  // hovering counts from now on, as for a person
  glfwSetCursorPos(v.window, double(x), double(y));
  frames(v, 1);  // there before anything happens: ImGui sees it hover first
  modifiers(v, mods, GLFW_PRESS);
  if (verb == "Wheel") ImGui_ImplGlfw_ScrollCallback(v.window, 0, double(notches));
  for (int i = 0; i < (verb == "DoubleClick" ? 2 : verb == "Click" ? 1 : 0); ++i) {
    ImGui_ImplGlfw_MouseButtonCallback(v.window, GLFW_MOUSE_BUTTON_LEFT, GLFW_PRESS, mods);
    frames(v, 1);  // down for a frame; up (GLFW's state) on the next
    ImGui_ImplGlfw_MouseButtonCallback(v.window, GLFW_MOUSE_BUTTON_LEFT, GLFW_RELEASE, mods);
    frames(v, 1);
  }
  modifiers(v, mods, GLFW_RELEASE);
  frames(v, 2);
  return true;
}

// What a person waits for before the next key: a file opening, a search (one a file brought back
// with it starts on the next frame), the What-if tab's replay.
void settle(Viewer& v) {
  auto search_due = [&] { return v.trace && !v.search.job && v.search.ran != v.search.query; };
  for (int idle_frames = 0; v.loading || v.search.job || whatif_busy(v) || (search_due() && idle_frames < 10);) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    poll_load(v);
    poll_search(v);
    if (whatif_busy(v) || search_due()) frames(v, 1), idle_frames += search_due();
  }
}

}  // namespace

bool press_keys(Viewer& v, const std::string& keys) {
  settle(v);
  size_t at = 0;
  while (at <= keys.size()) {
    size_t comma = keys.find(',', at);
    if (comma == std::string::npos) comma = keys.size();
    std::string token = keys.substr(at, comma - at);
    at = comma + 1;
    if (token.empty()) continue;
    int mods = 0;
    bool tap = false;
    for (bool more = true; more;) {
      more = false;
      for (auto [prefix, mod] : {std::pair{"Ctrl+", GLFW_MOD_CONTROL}, {"Shift+", GLFW_MOD_SHIFT}, {"Alt+", GLFW_MOD_ALT}, {"Tap+", 0}})
        if (token.size() > std::string_view(prefix).size() && token.starts_with(prefix)) {
          mods |= mod, tap = tap || mod == 0, token.erase(0, std::string_view(prefix).size()), more = true;
        }
    }
    int named = GLFW_KEY_UNKNOWN;
    for (const NamedKey& k : kNamed)
      if (token == k.name) named = k.key;
    if (named != GLFW_KEY_UNKNOWN) press(v, named, mods, 0, tap);
    else if (mouse(v, token, mods)) token.clear();
    else if (token.starts_with("Drop:")) {
      modifiers(v, mods, GLFW_PRESS);
      frames(v, 1);
      open_dropped(v, {token.substr(5)}, ImGui::GetIO().KeyShift || ImGui::GetIO().KeyCtrl);
      modifiers(v, mods, GLFW_RELEASE);
      token.clear();
    }
    for (char c : named != GLFW_KEY_UNKNOWN ? std::string() : token) {  // typed, one character at a time
      bool shift = false;
      const int key = key_of(c, shift);
      if (key == GLFW_KEY_UNKNOWN && !std::isprint(static_cast<unsigned char>(c))) {
        std::fprintf(stderr, "strata view: --keys: cannot type '%s'\n", token.c_str());
        return false;
      }
      const int m = mods | (shift && (c == '?' || !mods) ? GLFW_MOD_SHIFT : 0);  // Ctrl+F is Ctrl with f
      press(v, key, m, m & (GLFW_MOD_CONTROL | GLFW_MOD_ALT) ? 0 : static_cast<unsigned char>(c), tap);
    }
    settle(v);  // as a person would see it arrive
    frames(v, 2);
  }
  return true;
}

}  // namespace strata::viewer
