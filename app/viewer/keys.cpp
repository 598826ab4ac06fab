// Keys. Window-wide, before anything is drawn: Esc closes an open menu, popup, dialog
// (Attach included), results list or the key map and does nothing else; `?` opens and
// closes the key map.
// The timeline's: W/S zoom, A/D pan (as in Perfetto and Chrome's tracing), F fits the
// selection, U selects its parent (a step that back undoes), Esc, Backspace or Alt+Left go
// back (as in a browser; Esc first clears a measured range), 0 shows the whole trace.
#include "app/viewer/viewer.h"

#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_internal.h>

#include <GLFW/glfw3.h>

#include <algorithm>
#include <bitset>
#include <cmath>
#include <vector>

namespace strata::viewer {

namespace {

// Dear ImGui 1.86 reads each key as down or up when a frame begins: one pressed and let go
// between two frames (a quick tap, keys sent by a tool, a slow frame) never counts as pressed,
// so Ctrl+A in a text field did nothing and the next letter typed was appended. Such a
// release waits for the end of the next frame.
struct TappedKeys {
  GLFWwindow* window = nullptr;
  std::bitset<GLFW_KEY_LAST + 1> pressed;  // since the last frame ended
  struct Release {
    int key, scancode, mods;
  };
  std::vector<Release> releases;
};
TappedKeys tapped;

}  // namespace

bool any_popup_open() { return ImGui::IsPopupOpen("", ImGuiPopupFlags_AnyPopupId | ImGuiPopupFlags_AnyPopupLevel); }

void key_event(GLFWwindow* w, int key, int scancode, int action, int mods) {
  const bool known = key >= 0 && key <= GLFW_KEY_LAST;
  if (known && action == GLFW_PRESS) tapped.pressed.set(size_t(key));
  if (known && action == GLFW_RELEASE && tapped.pressed.test(size_t(key))) {
    tapped.window = w;
    tapped.releases.push_back({key, scancode, mods});
    return;
  }
  ImGui_ImplGlfw_KeyCallback(w, key, scancode, action, mods);
}

void release_tapped_keys() {
  tapped.pressed.reset();
  std::vector<TappedKeys::Release> releases;
  releases.swap(tapped.releases);
  for (const TappedKeys::Release& r : releases) ImGui_ImplGlfw_KeyCallback(tapped.window, r.key, r.scancode, GLFW_RELEASE, r.mods);
}

bool typed(unsigned c) {
  const ImGuiIO& io = ImGui::GetIO();
  const auto& q = io.InputQueueCharacters;
  return !io.WantTextInput && std::find(q.begin(), q.end(), ImWchar(c)) != q.end();
}

void handle_window_keys(Viewer& v) {
  v.panels.escape_taken = false;
  if (ImGui::IsKeyPressed(GLFW_KEY_ESCAPE, false)) {
    if (any_popup_open()) {  // a menu, a dialog, the key map
      ImGui::ClosePopupToLevel(0, true);
      v.panels.show_keymap = false;
      v.panels.escape_taken = true;
    } else if (close_search_list(v) || close_attach(v)) {
      v.panels.escape_taken = true;
    }
  }
  // `?` opens the key map, or closes it; over another dialog it waits.
  if (typed('?') && (v.panels.show_keymap || !any_popup_open())) v.panels.show_keymap = !v.panels.show_keymap;
}

void handle_keys(Viewer& v, float mouse_x, bool mouse_in) {
  ImGuiIO& io = ImGui::GetIO();
  if (io.WantTextInput || any_popup_open()) return;  // the keys are the menu's, the dialog's
  float dt = std::min(io.DeltaTime, 0.1f);
  float cx = mouse_in ? mouse_x : v.timeline.view.width_px * 0.5f;
  // Dear ImGui 1.86 indexes keys by the backend's key codes (GLFW's).
  auto down = [](int k) { return ImGui::IsKeyDown(k) && !ImGui::GetIO().KeyCtrl; };
  auto pressed = [](int k) { return ImGui::IsKeyPressed(k, false) && !ImGui::GetIO().KeyCtrl; };
  // W/S zoom, A/D pan, as in Perfetto and Chrome's tracing.
  if (down(GLFW_KEY_W)) v.timeline.animating = false, v.timeline.view.zoom_at(cx, std::pow(8.0, double(dt)));
  if (down(GLFW_KEY_S)) v.timeline.animating = false, v.timeline.view.zoom_at(cx, std::pow(8.0, -double(dt)));
  if (down(GLFW_KEY_A)) v.timeline.animating = false, v.timeline.view.pan_px(v.timeline.view.width_px * 1.2f * dt);
  if (down(GLFW_KEY_D)) v.timeline.animating = false, v.timeline.view.pan_px(-v.timeline.view.width_px * 1.2f * dt);
  if (pressed(GLFW_KEY_F) && v.sel.hl.selected.valid()) {
    render::Timeline& tl = v.trace->timeline;
    animate_to(v, double(tl.start_of(v.sel.hl.selected)), double(tl.end_of(v.sel.hl.selected)));
  }
  // U: up to the parent, the breadcrumb before the last.
  if (pressed(GLFW_KEY_U)) select_parent(v);
  // Back: Esc (unless it closed something this frame), Backspace, Alt+Left. With nowhere to
  // go back to, Esc lets go of the selection.
  const bool esc = ImGui::IsKeyPressed(GLFW_KEY_ESCAPE, false) && !v.panels.escape_taken;
  if (esc || ImGui::IsKeyPressed(GLFW_KEY_BACKSPACE, false) || (io.KeyAlt && ImGui::IsKeyPressed(GLFW_KEY_LEFT, false))) {
    v.timeline.animating = false;
    // Esc puts away a measured range, then what is alive, before it goes back.
    if (esc && v.timeline.range.active) clear_range(v);
    else if (esc && v.sel.memory_picked) select(v, {}, false);
    else if (!go_back(v) && esc && v.sel.hl.selected.valid()) select(v, {}, false);
  }
  if (pressed(GLFW_KEY_0)) animate_to(v, v.timeline.view.limit_begin, v.timeline.view.limit_end);
}

}  // namespace strata::viewer
