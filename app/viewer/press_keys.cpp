// Headless runs press keys as a person would (`strata view FILE --keys "?,Esc"`): each goes
// through the window's key and character events (Dear ImGui's GLFW backend), a frame with it
// down and one after it is let go, so the screenshot and the layout dump show what the keys did.
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

// One key with its modifiers: down for a frame, then up for a frame; `c` is what it types.
void press(Viewer& v, int key, int mods, unsigned c) {
  GLFWwindow* w = v.window;
  const int modifier_keys[][2] = {{GLFW_MOD_CONTROL, GLFW_KEY_LEFT_CONTROL}, {GLFW_MOD_SHIFT, GLFW_KEY_LEFT_SHIFT}, {GLFW_MOD_ALT, GLFW_KEY_LEFT_ALT}};
  for (const auto& [mod, k] : modifier_keys)
    if (mods & mod) ImGui_ImplGlfw_KeyCallback(w, k, 0, GLFW_PRESS, mods);
  if (key != GLFW_KEY_UNKNOWN) ImGui_ImplGlfw_KeyCallback(w, key, 0, GLFW_PRESS, mods);
  if (c) ImGui_ImplGlfw_CharCallback(w, c);
  frames(v, 1);
  if (key != GLFW_KEY_UNKNOWN) ImGui_ImplGlfw_KeyCallback(w, key, 0, GLFW_RELEASE, mods);
  for (const auto& [mod, k] : modifier_keys)
    if (mods & mod) ImGui_ImplGlfw_KeyCallback(w, k, 0, GLFW_RELEASE, 0);
  frames(v, 2);
}

}  // namespace

bool press_keys(Viewer& v, const std::string& keys) {
  size_t at = 0;
  while (at <= keys.size()) {
    size_t comma = keys.find(',', at);
    if (comma == std::string::npos) comma = keys.size();
    std::string token = keys.substr(at, comma - at);
    at = comma + 1;
    if (token.empty()) continue;
    int mods = 0;
    for (auto [prefix, mod] : {std::pair{"Ctrl+", GLFW_MOD_CONTROL}, {"Shift+", GLFW_MOD_SHIFT}, {"Alt+", GLFW_MOD_ALT}})
      while (token.size() > std::string_view(prefix).size() && token.starts_with(prefix)) mods |= mod, token.erase(0, std::string_view(prefix).size());
    int named = GLFW_KEY_UNKNOWN;
    for (const NamedKey& k : kNamed)
      if (token == k.name) named = k.key;
    if (named != GLFW_KEY_UNKNOWN) press(v, named, mods, 0);
    for (char c : named != GLFW_KEY_UNKNOWN ? std::string() : token) {  // typed, one character at a time
      bool shift = false;
      const int key = key_of(c, shift);
      if (key == GLFW_KEY_UNKNOWN && !std::isprint(static_cast<unsigned char>(c))) {
        std::fprintf(stderr, "strata view: --keys: cannot type '%s'\n", token.c_str());
        return false;
      }
      const int m = mods | (shift && (c == '?' || !mods) ? GLFW_MOD_SHIFT : 0);  // Ctrl+F is Ctrl with f
      press(v, key, m, m & (GLFW_MOD_CONTROL | GLFW_MOD_ALT) ? 0 : static_cast<unsigned char>(c));
    }
    // A file opened or a search started: wait for it, as a person would see it arrive.
    while (v.loading || v.search.job) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      poll_load(v);
      poll_search(v);
    }
    frames(v, 2);
  }
  return true;
}

}  // namespace strata::viewer
