// The viewer's window, main loop and panel layout, and `strata view` with its headless modes
// (--screenshot, --dump-layout, --bench-frames).
#include "app/viewer/viewer.h"

#include "app/commands.h"
#include "core/json_writer.h"

#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>

#include <GLFW/glfw3.h>

#include <GL/gl.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
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
  if (v && count > 0) start_load(*v, paths[0]);
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
  static const ImWchar ranges[] = {0x0020, 0x00FF, 0x2013, 0x2026, 0x2190, 0x21FF, 0x25A0, 0x25FF, 0};
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

void draw_welcome(Viewer& v) {
  const float s = v.scale;
  ImVec2 avail = ImGui::GetContentRegionAvail();
  ImGui::SetCursorPos(ImVec2(ImGui::GetCursorPosX() + avail.x * 0.3f, ImGui::GetCursorPosY() + avail.y * 0.25f));
  ImGui::BeginGroup();
  ImGui::PushFont(v.font_bold);
  ImGui::TextUnformatted("Strata");
  ImGui::PopFont();
  ImGui::TextDisabled("A profiler for deep-learning training traces");
  ImGui::Spacing();
  ImGui::TextUnformatted("Drop a PyTorch profiler trace (.json, .json.gz) on this window, or");
  if (ImGui::Button("Open a trace...", ImVec2(200 * s, 0))) open_file_browser(v);
  if (!v.recent.empty()) {
    ImGui::Spacing();
    ImGui::TextDisabled("Recent");
    for (const std::string& r : v.recent)
      if (ImGui::Selectable(r.c_str())) start_load(v, r);
  }
  ImGui::EndGroup();
}

void draw_loading(Viewer& v) {
  LoadJob& j = *v.job;
  ImGuiIO& io = ImGui::GetIO();
  ImGui::SetNextWindowPos(ImVec2(io.DisplaySize.x * 0.5f, io.DisplaySize.y * 0.5f), ImGuiCond_Always, ImVec2(0.5f, 0.5f));
  ImGui::SetNextWindowSize(ImVec2(520 * v.scale, 0));
  ImGui::Begin("Loading", nullptr, ImGuiWindowFlags_NoCollapse | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoMove |
                                       ImGuiWindowFlags_NoSavedSettings);
  static const char* stages[] = {"Starting", "Reading", "Parsing", "Building the model", "Preparing the view"};
  int st = std::clamp(j.progress.stage.load(), 0, 4);
  ImGui::TextWrapped("%s", j.path.c_str());
  float frac = st >= 4 ? 1.0f : float(j.progress.fraction());
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - j.started).count();
  char overlay[96];
  std::snprintf(overlay, sizeof overlay, "%s  %.0f%%  (%.1f s)", stages[st], double(frac) * 100, secs);
  ImGui::ProgressBar(frac, ImVec2(-1, 0), overlay);
  if (ImGui::Button("Cancel")) cancel_load(v), v.error = "Loading was cancelled.";
  ImGui::End();
}

void draw_menu(Viewer& v) {
  if (!ImGui::BeginMenuBar()) return;
  if (ImGui::BeginMenu("File")) {
    if (ImGui::MenuItem("Open...", "Ctrl+O")) open_file_browser(v);
    if (ImGui::BeginMenu("Open recent", !v.recent.empty())) {
      for (const std::string& r : v.recent)
        if (ImGui::MenuItem(r.c_str())) start_load(v, r);
      ImGui::EndMenu();
    }
    if (ImGui::MenuItem("Attach...", "Ctrl+R")) open_attach(v);
    if (ImGui::MenuItem("Close", nullptr, false, v.trace != nullptr)) v.trace.reset();
    ImGui::Separator();
    if (ImGui::MenuItem("Quit", "Ctrl+Q")) v.quit = true;
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("View")) {
    ImGui::MenuItem("Details panel", nullptr, &v.show_details);
    ImGui::MenuItem("Levels and summary", nullptr, &v.show_levels);
    if (ImGui::MenuItem("Whole trace", "0", false, v.trace != nullptr)) animate_to(v, v.view.limit_begin, v.view.limit_end);
    if (ImGui::MenuItem("Back", "Esc", false, !v.history.stack.empty())) v.history.pop(v.view);
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("Help")) {
    ImGui::TextDisabled("Wheel, W/S: zoom    drag, A/D: pan    Shift+wheel: scroll rows");
    ImGui::TextDisabled("Click: select    double-click, F: zoom to it    Esc: back    0: whole trace");
    ImGui::TextDisabled("/ or Ctrl+F: search, Enter/Shift+Enter: next/previous");
    ImGui::TextDisabled("Ctrl+R: attach to a running job and record it, shown live");
    ImGui::EndMenu();
  }
  draw_recording_indicator(v);
  if (v.trace) {
    const TraceModel& m = *v.trace->model;
    std::string info = m.path.substr(m.path.find_last_of('/') == std::string::npos ? 0 : m.path.find_last_of('/') + 1) +
                       "   " + std::to_string(m.ev.size()) + " events";
    float w = ImGui::CalcTextSize(info.c_str()).x;
    ImGui::SameLine(ImGui::GetWindowWidth() - w - 16 * v.scale);
    ImGui::TextDisabled("%s", info.c_str());
  }
  ImGui::EndMenuBar();
}

}  // namespace

void draw_ui(Viewer& v) {
  ImGuiIO& io = ImGui::GetIO();
  const float s = v.scale;
  if (io.KeyCtrl && ImGui::IsKeyPressed(GLFW_KEY_O, false)) open_file_browser(v);
  if (io.KeyCtrl && ImGui::IsKeyPressed(GLFW_KEY_Q, false)) v.quit = true;
  ImGui::SetNextWindowPos(ImVec2(0, 0));
  ImGui::SetNextWindowSize(io.DisplaySize);
  ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, ImVec2(6 * s, 4 * s));
  // glClear paints the background; a transparent main window saves a full-screen fill, which
  // matters under software rendering (llvmpipe).
  ImGui::SetNextWindowBgAlpha(0.0f);
  ImGui::Begin("##main", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_MenuBar |
                   ImGuiWindowFlags_NoBringToFrontOnFocus | ImGuiWindowFlags_NoScrollWithMouse |
                   ImGuiWindowFlags_NoSavedSettings);
  ImGui::PopStyleVar();
  draw_menu(v);
  if (!v.error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.55f, 0.45f, 1));
    ImGui::TextWrapped("%s", v.error.c_str());
    ImGui::PopStyleColor();
    ImGui::SameLine();
    if (ImGui::SmallButton("Dismiss")) v.error.clear();
  }
  if (!v.trace) {
    draw_welcome(v);
  } else {
    // Toolbar: breadcrumbs on the left, search on the right.
    float search_w = 420 * s;
    ImGui::BeginChild("crumbs", ImVec2(ImGui::GetContentRegionAvail().x - search_w, ImGui::GetFrameHeight() + 2 * s), false,
                      ImGuiWindowFlags_NoScrollbar);
    draw_breadcrumbs(v);
    ImGui::EndChild();
    ImGui::SameLine();
    draw_search_bar(v);

    ImVec2 avail = ImGui::GetContentRegionAvail();
    float details_w = v.show_details ? std::clamp(avail.x * 0.26f, 280 * s, 520 * s) : 0;
    float bottom_h = v.show_levels ? std::clamp(avail.y * 0.28f, 150 * s, 400 * s) : 0;
    float tl_w = avail.x - (v.show_details ? details_w + ImGui::GetStyle().ItemSpacing.x : 0);
    float tl_h = avail.y - (v.show_levels ? bottom_h + ImGui::GetStyle().ItemSpacing.y : 0);
    ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, ImVec2(0, 0));
    ImGui::BeginChild("timeline", ImVec2(tl_w, tl_h), true, ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
    ImVec2 p = ImGui::GetCursorScreenPos();
    draw_timeline(v, p.x, p.y, tl_w - 2, tl_h - 2);
    ImGui::EndChild();
    ImGui::PopStyleVar();
    if (v.show_details) {
      ImGui::SameLine();
      ImGui::BeginChild("details", ImVec2(details_w, tl_h), true);
      draw_details(v);
      ImGui::EndChild();
    }
    if (v.show_levels) {
      ImGui::BeginChild("bottom", ImVec2(0, bottom_h), true);
      if (ImGui::BeginTabBar("tabs")) {
        if (ImGui::BeginTabItem("Levels")) {
          ImGui::BeginChild("levels_scroll");
          draw_levels(v);
          ImGui::EndChild();
          ImGui::EndTabItem();
        }
        ImGuiTabItemFlags sum_flags = v.bottom_tab == 1 ? ImGuiTabItemFlags_SetSelected : 0;
        v.bottom_tab = -1;
        if (ImGui::BeginTabItem("Summary", nullptr, sum_flags)) {
          ImGui::BeginChild("summary_scroll");
          draw_summary(v);
          ImGui::EndChild();
          ImGui::EndTabItem();
        }
        ImGui::EndTabBar();
      }
      ImGui::EndChild();
    }
  }
  draw_file_browser(v);
  ImGui::End();
  draw_attach(v);
  if (v.job) draw_loading(v);
}

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
  glfwSwapInterval(v.headless ? 0 : 1);
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
  ImGui_ImplOpenGL3_Init("#version 330 core");
  v.trace.reset();
  v.timeline_h = 0;
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
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  auto t0 = std::chrono::steady_clock::now();
  ImGui::NewFrame();
  ImGui::PushFont(v.font);
  if (v.metrics.height == 0 || v.metrics.height != v.font->FontSize) update_metrics(v);
  draw_ui(v);
  ImGui::PopFont();
  ImGui::Render();
  auto t1 = std::chrono::steady_clock::now();
  int w = 0, h = 0;
  glfwGetFramebufferSize(v.window, &w, &h);
  glViewport(0, 0, w, h);
  glClearColor(0.118f, 0.122f, 0.137f, 1);
  glClear(GL_COLOR_BUFFER_BIT);
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
  if (!v.capture.empty()) {
    if (!save_screenshot(v.capture, w, h, v.capture_error, v.last_capture) && v.capture_error.empty())
      v.capture_error = "capture failed";
    v.capture.clear();
  }
  if (v.finish_gl) glFinish();
  auto t2 = std::chrono::steady_clock::now();
  glfwSwapBuffers(v.window);
  auto t3 = std::chrono::steady_clock::now();
  v.ui_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  v.gl_ms = std::chrono::duration<double, std::milli>(t2 - t1).count();
  v.swap_ms = std::chrono::duration<double, std::milli>(t3 - t2).count();
}

namespace {

bool parse_size(std::string_view s, int& w, int& h) {
  size_t x = s.find('x');
  if (x == std::string_view::npos) return false;
  w = std::atoi(std::string(s.substr(0, x)).c_str());
  h = std::atoi(std::string(s.substr(x + 1)).c_str());
  return w >= 200 && h >= 150 && w <= 16384 && h <= 16384;
}

void usage_view(FILE* out) {
  std::fputs("usage: strata view [FILE] [--screenshot OUT.png] [--size WxH] [--focus \"Iteration 3/...\"]\n"
             "                   [--dump-layout OUT.json] [--bench-frames N] [--no-details] [--no-levels]\n"
             "                   [--tab levels|summary]\n"
             "                   [--attach PID [--duration S | --iterations N] [-o FILE] [--live-screenshot OUT.png]]\n"
             "                   [--attach-dialog]   (File > Attach, scripted)\n",
             out);
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = size_t(std::ceil(p / 100.0 * double(v.size()))) - 1;
  return v[std::min(i, v.size() - 1)];
}

std::string layout_json(Viewer& v, const ImageStats* img) {
  JsonWriter j;
  j.begin_object();
  if (img) {
    j.key("image").begin_object();
    j.field("width", img->width).field("height", img->height).field("distinct_colours", uint64_t(img->distinct_colours));
    j.field("non_background", img->non_background).field("mean_luma", img->mean_luma);
    j.end_object();
  }
  const render::FrameLayout& fl = v.frame;
  j.field("width", double(v.view.width_px)).field("view_t0", v.view.t0).field("view_t1", v.view.t1());
  j.field("rows", uint64_t(fl.rows.size())).field("items", uint64_t(fl.items.size()));
  j.field("rects", uint64_t(fl.rects.size())).field("folded", uint64_t(fl.folded_items)).field("labels", uint64_t(fl.labels));
  j.field("layout_ms", v.layout_ms);
  if (v.trace) {
    render::Timeline& tl = v.trace->timeline;
    j.key("sections").begin_array();
    for (const render::Section& s : tl.sections)
      if (!s.lanes.empty()) j.value(s.title);
    j.end_array();
    j.key("lanes").begin_array();
    for (const render::GutterLabel& g : fl.gutter)
      if (!g.section) j.value(tl.lanes[g.index].title);
    j.end_array();
    j.key("path").begin_array();
    for (const render::ItemRef& r : v.path) j.value(tl.name_of(r));
    j.end_array();
    j.field("selected", tl.name_of(v.hl.selected));
    j.field("related", uint64_t(v.hl.related.size())).field("flows", uint64_t(v.flows.size()));
    j.key("texts").begin_array();
    for (size_t i = 0; i < fl.texts.size() && i < 400; ++i)
      j.value(std::string_view(fl.text).substr(fl.texts[i].offset, fl.texts[i].len));
    j.end_array();
    j.field("bytes_per_event", v.trace->model->ev.size()
                                   ? double(v.trace->timeline.tiers().bytes() + v.trace->timeline.view_bytes()) /
                                         double(v.trace->model->ev.size())
                                   : 0.0);
  }
  j.end_object();
  return j.str();
}

}  // namespace

std::string dump_layout(Viewer& v, const ImageStats* img) { return layout_json(v, img); }

int run_view(int argc, char** argv) {
  std::string path, shot, dump, focus;
  int width = 1600, height = 1000, bench = 0;
  bool no_details = false, no_levels = false;
  int tab = 0;
  AttachRequest attach;
  std::string attach_error;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (a == "--screenshot") {
      const char* p = next();
      if (!p) return usage_view(stderr), 2;
      shot = p;
    } else if (a == "--dump-layout") {
      const char* p = next();
      if (!p) return usage_view(stderr), 2;
      dump = p;
    } else if (a == "--size") {
      const char* p = next();
      if (!p || !parse_size(p, width, height)) return std::fprintf(stderr, "strata view: --size WxH, e.g. 1920x1080\n"), 2;
    } else if (a == "--focus") {
      const char* p = next();
      if (!p) return usage_view(stderr), 2;
      focus = p;
    } else if (a == "--bench-frames") {
      const char* p = next();
      if (!p || (bench = std::atoi(p)) <= 0) return std::fprintf(stderr, "strata view: --bench-frames N\n"), 2;
    } else if (a == "--no-details") {
      no_details = true;
    } else if (a == "--no-levels") {
      no_levels = true;
    } else if (a == "--tab") {
      const char* p = next();
      tab = p && std::string_view(p) == "summary" ? 1 : 0;
    } else if (parse_attach_option(argc, argv, i, attach, attach_error)) {
      if (!attach_error.empty()) return std::fprintf(stderr, "strata view: %s\n", attach_error.c_str()), 2;
    } else if (a == "-h" || a == "--help") {
      usage_view(stdout);
      return 0;
    } else if (a.starts_with("-")) {
      std::fprintf(stderr, "strata view: unknown option '%s'\n", argv[i]);
      usage_view(stderr);
      return 2;
    } else if (path.empty()) {
      path = a;
    } else {
      std::fprintf(stderr, "strata view: one file at a time\n");
      return 2;
    }
  }
  const bool headless = !shot.empty() || !dump.empty() || bench > 0;
  if (headless && path.empty() && !attach.wanted()) {
    std::fprintf(stderr, "strata view: --screenshot, --dump-layout and --bench-frames need a FILE (or --attach)\n");
    return 2;
  }
  auto v = std::make_unique<Viewer>();
  v->headless = headless;
  v->show_details = !no_details;
  v->show_levels = !no_levels;
  v->bottom_tab = tab == 1 ? 1 : -1;
  if (!init_window(*v, width, height, true)) {
    std::fprintf(stderr, "strata: cannot open a window (no display, or no OpenGL 3.3)%s\n",
                 headless ? "; run under xvfb-run for headless use" : "");
    return 1;
  }
  load_recent(*v);
  if (!path.empty()) start_load(*v, path);
  if (attach.wanted()) start_attach(*v, attach);

  if (!headless) {
    while (!glfwWindowShouldClose(v->window) && !v->quit) {
      bool busy = v->job || v->search.job || v->animating || v->dragging || ImGui::GetIO().WantTextInput;
      for (int k : {GLFW_KEY_W, GLFW_KEY_A, GLFW_KEY_S, GLFW_KEY_D}) busy = busy || glfwGetKey(v->window, k) == GLFW_PRESS;
      if (busy) glfwPollEvents();
      else glfwWaitEventsTimeout(0.25);
      poll_load(*v);
      poll_search(*v);
      frame(*v);
    }
    cancel_load(*v);
    shutdown_window(*v);
    return 0;
  }

  if (attach.wanted()) {
    const int rc = run_attach_headless(*v, attach, {shot, dump, focus});
    shutdown_window(*v);
    return rc;
  }
  // Headless: wait for the load, then render.
  v->job->worker.join();
  v->job->worker = std::thread();
  v->job->done = true;
  if (!v->job->result) {
    std::fprintf(stderr, "strata: %s\n", v->job->error.c_str());
    shutdown_window(*v);
    return 1;
  }
  install(*v, std::move(v->job->result));
  v->job.reset();
  frame(*v);  // settles the layout (panel sizes, fonts)
  if (!focus.empty()) {
    render::ItemRef r = render::resolve_focus(v->trace->timeline, focus);
    if (!r.valid()) std::fprintf(stderr, "strata view: --focus '%s' matched nothing\n", focus.c_str());
    else focus_on(*v, r);
  }
  int rc = 0;
  if (bench > 0) {
    // Scripted zoom from the whole trace down to one kernel (the longest GPU op near the
    // middle), scrolling through the rows as it goes.
    const TraceModel& m = *v->trace->model;
    EventId target = kNoEvent;
    Ns mid = (m.time_begin + m.time_end) / 2;
    size_t most = 0;
    for (const Track& t : m.tracks) {  // the first kernel after the middle, on the busiest stream
      if (t.kind != TrackKind::GpuStream || t.events.size() <= most) continue;
      for (const IndexRange& l : t.levels) {
        auto it = std::lower_bound(m.ev.start.begin() + l.begin, m.ev.start.begin() + l.end, mid);
        for (; it != m.ev.start.begin() + l.end; ++it) {
          EventId e = EventId(it - m.ev.start.begin());
          if (m.ev.category(e) == Cat::Kernel) {
            target = e;
            most = t.events.size();
            break;
          }
        }
      }
    }
    double a0 = double(m.time_begin), a1 = double(m.time_end);
    double b0 = target != kNoEvent ? double(m.ev.start[target]) : double(mid), b1 = target != kNoEvent ? double(m.ev.end(target)) : double(mid) + 1000;
    b1 = std::max(b1, b0 + 100);
    std::vector<double> layout_ms, frame_ms;
    v->finish_gl = true;
    const bool verbose = std::getenv("STRATA_BENCH_VERBOSE") != nullptr;
    float content_h = v->trace->timeline.content_height();
    for (int i = 0; i < bench; ++i) {
      double f = bench > 1 ? double(i) / double(bench - 1) : 1.0;
      double span = std::exp(std::log(a1 - a0) + (std::log(b1 - b0) - std::log(a1 - a0)) * f);
      double c = (a0 + a1) * 0.5 + ((b0 + b1) * 0.5 - (a0 + a1) * 0.5) * std::min(1.0, f * 4);
      v->view.fit(c - span * 0.5, c + span * 0.5, 0);
      v->scroll_y = float(i % 4) / 4.0f * std::max(0.0f, content_h - v->timeline_h);
      auto t0 = std::chrono::steady_clock::now();
      glfwPollEvents();
      frame(*v);
      frame_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      layout_ms.push_back(v->layout_ms);
      if (verbose)
        std::printf("frame %3d span %-10s scroll %6.0f layout %6.3f ms frame %7.3f ms (ui %.3f gl %.3f swap %.3f) items %zu rects %zu texts %zu\n",
                    i, render::format_duration(span).c_str(), double(v->scroll_y), v->layout_ms, frame_ms.back(), v->ui_ms, v->gl_ms,
                    v->swap_ms, v->frame.items.size(), v->frame.rects.size(), v->frame.texts.size());
    }
    std::printf("frames %d at %dx%d, zoom from %s to %s\n", bench, width, height, render::format_duration(a1 - a0).c_str(),
                render::format_duration(b1 - b0).c_str());
    std::printf("timeline layout ms: p50 %.3f  p90 %.3f  p99 %.3f  max %.3f\n", percentile(layout_ms, 50),
                percentile(layout_ms, 90), percentile(layout_ms, 99), percentile(layout_ms, 100));
    std::printf("whole frame ms:     p50 %.3f  p90 %.3f  p99 %.3f  max %.3f\n", percentile(frame_ms, 50),
                percentile(frame_ms, 90), percentile(frame_ms, 99), percentile(frame_ms, 100));
    size_t events = m.ev.size();
    size_t view_bytes = v->trace->timeline.tiers().bytes() + v->trace->timeline.view_bytes();
    std::printf("events %zu, view bytes %zu (%.3f per event), model bytes %zu\n", events, view_bytes,
                events ? double(view_bytes) / double(events) : 0.0, m.bytes());
    v->finish_gl = false;
  }
  // A few frames so the panels and the view settle (animations are immediate headless).
  for (int i = 0; i < 3; ++i) {
    glfwPollEvents();
    frame(*v);
  }
  ImageStats stats;
  if (!shot.empty()) {
    v->capture = shot;
    v->last_capture = &stats;
    frame(*v);
    if (!v->capture_error.empty()) {
      std::fprintf(stderr, "strata view: %s\n", v->capture_error.c_str());
      rc = 1;
    }
  }
  if (!dump.empty()) {
    std::ofstream out(dump);
    out << layout_json(*v, shot.empty() ? nullptr : &stats) << "\n";
    if (!out) std::fprintf(stderr, "strata view: cannot write %s\n", dump.c_str()), rc = 1;
  }
  shutdown_window(*v);
  return rc;
}

}  // namespace strata::viewer

bool viewer_display_available() {
  const char* d = std::getenv("DISPLAY");
  const char* w = std::getenv("WAYLAND_DISPLAY");
  return (d && *d) || (w && *w);
}

int cmd_view(int argc, char** argv) { return strata::viewer::run_view(argc, argv); }
