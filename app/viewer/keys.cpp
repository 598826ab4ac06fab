// The timeline's keys: W/S zoom, A/D pan (as in Perfetto and Chrome's tracing), F fits the
// selection, Esc goes back, 0 shows the whole trace.
#include "app/viewer/viewer.h"

#include <imgui.h>

#include <GLFW/glfw3.h>

#include <algorithm>
#include <cmath>

namespace strata::viewer {

void handle_keys(Viewer& v, float mouse_x, bool mouse_in) {
  ImGuiIO& io = ImGui::GetIO();
  if (io.WantTextInput) return;
  float dt = std::min(io.DeltaTime, 0.1f);
  float cx = mouse_in ? mouse_x : v.timeline.view.width_px * 0.5f;
  // Dear ImGui 1.86 indexes keys by the backend's key codes (GLFW's).
  auto down = [](int k) { return ImGui::IsKeyDown(k) && !ImGui::GetIO().KeyCtrl; };
  // W/S zoom, A/D pan, as in Perfetto and Chrome's tracing.
  if (down(GLFW_KEY_W)) v.timeline.animating = false, v.timeline.view.zoom_at(cx, std::pow(8.0, double(dt)));
  if (down(GLFW_KEY_S)) v.timeline.animating = false, v.timeline.view.zoom_at(cx, std::pow(8.0, -double(dt)));
  if (down(GLFW_KEY_A)) v.timeline.animating = false, v.timeline.view.pan_px(v.timeline.view.width_px * 1.2f * dt);
  if (down(GLFW_KEY_D)) v.timeline.animating = false, v.timeline.view.pan_px(-v.timeline.view.width_px * 1.2f * dt);
  if (ImGui::IsKeyPressed(GLFW_KEY_F, false) && v.sel.hl.selected.valid()) {
    render::Timeline& tl = v.trace->timeline;
    animate_to(v, double(tl.start_of(v.sel.hl.selected)), double(tl.end_of(v.sel.hl.selected)));
  }
  if (ImGui::IsKeyPressed(GLFW_KEY_ESCAPE, false)) {
    v.timeline.animating = false;
    if (!v.timeline.history.pop(v.timeline.view) && v.sel.hl.selected.valid()) select(v, {}, false);
  }
  if (ImGui::IsKeyPressed(GLFW_KEY_0, false)) animate_to(v, v.timeline.view.limit_begin, v.timeline.view.limit_end);
}

}  // namespace strata::viewer
