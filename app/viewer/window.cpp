// The window: GLFW, an OpenGL 3.3 context, Dear ImGui's style and fonts, and one frame.
#include "app/viewer/viewer.h"

#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>

#include <GLFW/glfw3.h>

#include <GL/gl.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#ifdef STRATA_HAVE_EMBEDDED_FONT
extern const unsigned char strata_font_sans[];
extern const unsigned strata_font_sans_size;
extern const unsigned char strata_font_sans_bold[];
extern const unsigned strata_font_sans_bold_size;
#endif

namespace strata::viewer {

namespace {

void on_drop(GLFWwindow* w, int count, const char** paths) {
  auto* v = static_cast<Viewer*>(glfwGetWindowUserPointer(w));
  if (!v || count <= 0) return;
  const ImGuiIO& io = ImGui::GetIO();
  open_dropped(*v, std::vector<std::string>(paths, paths + count), io.KeyShift || io.KeyCtrl);
}

void on_glfw_error(int code, const char* what) { std::fprintf(stderr, "strata: GLFW error %d: %s\n", code, what); }

void setup_style(float scale) {
  ImGui::StyleColorsDark();
  ImGuiStyle& st = ImGui::GetStyle();
  st.WindowRounding = 0;
  st.ChildRounding = 0;
  st.FrameRounding = 3;
  st.GrabRounding = 3;
  st.TabRounding = 3;
  st.WindowBorderSize = 0;
  st.ChildBorderSize = 1;
  st.FramePadding = ImVec2(6, 3);
  st.ItemSpacing = ImVec2(8, 5);
  // Axis-aligned boxes need no anti-aliased fringes; without them software GL draws far fewer
  // triangles.
  st.AntiAliasedFill = false;
  st.AntiAliasedLines = false;
  ImVec4* c = st.Colors;
  c[ImGuiCol_WindowBg] = ImVec4(0.118f, 0.122f, 0.137f, 1);
  c[ImGuiCol_ChildBg] = ImVec4(0, 0, 0, 0);  // the main window's background shows through: less overdraw
  c[ImGuiCol_PopupBg] = ImVec4(0.14f, 0.145f, 0.16f, 0.98f);
  c[ImGuiCol_MenuBarBg] = ImVec4(0.16f, 0.165f, 0.18f, 1);
  c[ImGuiCol_Border] = ImVec4(0.26f, 0.27f, 0.30f, 1);
  c[ImGuiCol_FrameBg] = ImVec4(0.20f, 0.21f, 0.23f, 1);
  c[ImGuiCol_Button] = ImVec4(0.22f, 0.23f, 0.26f, 1);
  c[ImGuiCol_ButtonHovered] = ImVec4(0.30f, 0.32f, 0.36f, 1);
  c[ImGuiCol_ButtonActive] = ImVec4(0.20f, 0.42f, 0.62f, 1);
  c[ImGuiCol_Header] = ImVec4(0.22f, 0.23f, 0.26f, 1);
  c[ImGuiCol_HeaderHovered] = ImVec4(0.28f, 0.30f, 0.34f, 1);
  c[ImGuiCol_Tab] = ImVec4(0.18f, 0.19f, 0.21f, 1);
  c[ImGuiCol_TabActive] = ImVec4(0.20f, 0.42f, 0.62f, 1);
  c[ImGuiCol_TabHovered] = ImVec4(0.26f, 0.50f, 0.72f, 1);
  c[ImGuiCol_TitleBgActive] = ImVec4(0.16f, 0.165f, 0.18f, 1);
  st.ScaleAllSizes(scale);
}

void load_fonts(Viewer& v) {
  ImGuiIO& io = ImGui::GetIO();
  io.Fonts->Clear();
  // Every character the viewer writes (tests/render/glyphs_test.py checks): Latin-1, Δ (the
  // time between flags), dashes and "…", arrows, shapes, and U+FFFD for bytes a name mangled.
  static const ImWchar ranges[] = {0x0020, 0x00FF, 0x0394, 0x0394, 0x2013, 0x2026, 0x2190, 0x21FF, 0x25A0, 0x25FF, 0xFFFD, 0xFFFD, 0};
  float px = std::round(14.0f * v.scale);
#ifdef STRATA_HAVE_EMBEDDED_FONT
  ImFontConfig cfg;
  cfg.FontDataOwnedByAtlas = false;
  cfg.OversampleH = 2;
  v.font = io.Fonts->AddFontFromMemoryTTF(const_cast<unsigned char*>(strata_font_sans), int(strata_font_sans_size), px,
                                          &cfg, ranges);
  v.font_bold = io.Fonts->AddFontFromMemoryTTF(const_cast<unsigned char*>(strata_font_sans_bold),
                                               int(strata_font_sans_bold_size), px, &cfg, ranges);
#else
  ImFontConfig cfg;
  cfg.SizePixels = std::round(13.0f * v.scale);
  v.font = io.Fonts->AddFontDefault(&cfg);
  v.font_bold = v.font;
#endif
  io.Fonts->Build();
}

// The vertices of each window's draw list: a child window ("##main/bottom_1234ABCD/
// levels_scroll_5678ABCD") by its own name ("levels_scroll"), everything else (the menus,
// popups, dialogs) as "main".
void count_vertices(FrameParts& parts) {
  const ImDrawData* d = ImGui::GetDrawData();
  for (int i = 0; d && i < d->CmdListsCount; ++i) {
    const ImDrawList* l = d->CmdLists[i];
    std::string_view owner = l->_OwnerName ? l->_OwnerName : "";
    const size_t slash = owner.rfind('/'), tail = owner.rfind('_');
    std::string name = slash != std::string_view::npos && tail != std::string_view::npos && tail > slash
                           ? std::string(owner.substr(slash + 1, tail - slash - 1))
                           : std::string("main");
    auto it = std::find_if(parts.vertices.begin(), parts.vertices.end(), [&](const auto& p) { return p.first == name; });
    if (it == parts.vertices.end()) parts.vertices.emplace_back(std::move(name), size_t(l->VtxBuffer.Size));
    else it->second += size_t(l->VtxBuffer.Size);
  }
}

}  // namespace

bool init_window(Viewer& v, int width, int height, bool visible) {
  glfwSetErrorCallback(on_glfw_error);
  if (!glfwInit()) return false;
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_VISIBLE, visible ? GLFW_TRUE : GLFW_FALSE);
  glfwWindowHint(GLFW_SCALE_TO_MONITOR, GLFW_TRUE);
  // Dear ImGui never tests depth or stencil; without those buffers llvmpipe draws boxes faster.
  glfwWindowHint(GLFW_DEPTH_BITS, 0);
  glfwWindowHint(GLFW_STENCIL_BITS, 0);
  v.window = glfwCreateWindow(width, height, "Strata", nullptr, nullptr);
  if (!v.window) {
    glfwTerminate();
    return false;
  }
  glfwMakeContextCurrent(v.window);
  glfwSwapInterval(v.capture.headless ? 0 : 1);
  glfwSetWindowUserPointer(v.window, &v);
  glfwSetDropCallback(v.window, on_drop);
  float xs = 1, ys = 1;
  glfwGetWindowContentScale(v.window, &xs, &ys);
  v.scale = std::clamp(std::max(xs, ys), 1.0f, 4.0f);
  if (const char* e = std::getenv("STRATA_SCALE")) v.scale = std::clamp(float(std::atof(e)), 0.5f, 4.0f);

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;
  io.ConfigWindowsMoveFromTitleBarOnly = true;
  setup_style(v.scale);
  load_fonts(v);
  ImGui_ImplGlfw_InitForOpenGL(v.window, true);
  glfwSetKeyCallback(v.window, key_event);  // keys.cpp: quick taps count (it calls Dear ImGui's)
  ImGui_ImplOpenGL3_Init("#version 330 core");
  v.trace.reset();
  v.timeline.height = 0;
  return true;
}

void shutdown_window(Viewer& v) {
  if (!v.window) return;
  forget_solid();
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(v.window);
  glfwTerminate();
  v.window = nullptr;
}

void frame(Viewer& v) {
  FrameParts& parts = v.capture.parts;
  parts.clear();
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  {
    PartTimer ui(parts, "other ui");  // what the named parts inside leave: menus, splitters, ImGui itself
    ImGui::NewFrame();
    ImGui::PushFont(v.font);
    if (v.metrics.height == 0 || v.metrics.height != v.font->FontSize) update_metrics(v);
    draw_ui(v);
    ImGui::PopFont();
  }
  {
    PartTimer render(parts, "imgui render");
    ImGui::Render();
  }
  count_vertices(parts);
  int w = 0, h = 0;
  glfwGetFramebufferSize(v.window, &w, &h);
  {
    PartTimer gl(parts, "gl");
    glViewport(0, 0, w, h);
    glClearColor(0.118f, 0.122f, 0.137f, 1);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    if (!v.capture.path.empty()) {
      if (!save_screenshot(v.capture.path, w, h, v.capture.error, v.capture.stats) && v.capture.error.empty())
        v.capture.error = "capture failed";
      v.capture.path.clear();
    }
    if (v.capture.finish_gl) glFinish();
  }
  PartTimer swap(parts, "swap");
  glfwSwapBuffers(v.window);
}

}  // namespace strata::viewer
