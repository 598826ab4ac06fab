// The viewer: a GLFW window drawn with Dear ImGui on OpenGL 3.3. One file per feature:
//   viewer.cpp     window, main loop, menus, layout of the panels, headless modes
//   loading.cpp    loading on a worker thread (progress, cancel), preparing the view
//   timeline.cpp   the timeline: ruler, gutter, items, arrows, zoom/pan/select input
//   levels.cpp     the Hotline-style levels view and the breadcrumbs
//   details.cpp    the details panel
//   summary.cpp    the summary panel (small charts)
//   search.cpp     search over names
//   files.cpp      File ▸ Open browser, recent files
//   screenshot.cpp PNG capture
#pragma once

#include "core/annotate/annotation.h"
#include "core/loader.h"
#include "render/drill.h"
#include "render/ruler.h"
#include "render/summary.h"
#include "render/timeline.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

struct GLFWwindow;
struct ImFont;

namespace strata::viewer {

// Everything built from a trace off the UI thread.
struct Prepared {
  std::unique_ptr<TraceModel> model;
  std::unique_ptr<Annotation> annotation;  // iterations, phases, layers (null when it failed)
  render::Timeline timeline;
  render::Summary summary;
};

struct LoadJob {
  std::string path;
  Progress progress;
  std::atomic<bool> done{false};
  std::string error;
  std::unique_ptr<Prepared> result;
  std::thread worker;
  std::chrono::steady_clock::time_point started;
};

struct SearchState {
  char query[256] = {};
  std::string ran;                   // the query the matches are for
  std::vector<EventId> matches;      // sorted by id (for highlighting)
  std::vector<EventId> by_time;      // navigation order
  int current = -1;
  bool focus_request = false;
};

struct FileBrowser {
  bool open = false;
  std::string dir;
  std::vector<std::pair<std::string, bool>> entries;  // name, is directory
  char path_buf[1024] = {};
  std::string error;
};

struct Viewer {
  GLFWwindow* window = nullptr;
  float scale = 1.0f;  // content scale (high DPI)
  ImFont* font = nullptr;
  ImFont* font_bold = nullptr;
  render::FontMetrics metrics;

  std::unique_ptr<Prepared> trace;  // the open trace (null: none)
  std::unique_ptr<LoadJob> job;     // a load in progress
  std::string error;                // shown in the window until dismissed
  std::vector<std::string> recent;

  // Timeline view state.
  render::TimeView view;
  render::ViewHistory history;
  render::FrameLayout frame;
  render::Highlight hl;
  std::vector<std::pair<EventId, EventId>> flows;
  float scroll_y = 0;
  float timeline_h = 0;           // visible height of the rows
  bool dragging = false;
  float drag_total = 0;
  render::ItemRef hovered;
  uint32_t hovered_fold = 0;
  std::vector<render::ItemRef> path;  // focus path of the selection (breadcrumbs)
  std::vector<EventId> sel_kernels;   // GPU ops under the selection (details)
  double layout_ms = 0;               // last timeline layout time

  // Levels view: the item chosen in each row.
  std::vector<render::ItemRef> levels_chosen;

  SearchState search;
  FileBrowser browser;
  bool show_levels = true, show_details = true;
  int bottom_tab = 0;  // 0 levels, 1 summary
  float details_w = 0, bottom_h = 0;

  // Animation of the view towards a target (double-click, F, breadcrumbs).
  bool animating = false;
  double anim_t0 = 0, anim_t1 = 0;

  bool headless = false;
  std::string capture;        // set: the next frame is saved to this PNG before it is shown
  std::string capture_error;
  struct ImageStats* last_capture = nullptr;  // where to put the capture's statistics
  bool finish_gl = false;
  double ui_ms = 0, gl_ms = 0, swap_ms = 0;  // last frame: building the UI, rendering it, presenting     // glFinish before swapping (frame benchmark)
  bool quit = false;
};

// Entry points used by cmd_view.
bool init_window(Viewer& v, int width, int height, bool visible);
void shutdown_window(Viewer& v);
void frame(Viewer& v);           // one UI frame: new frame, draw, render, swap
void draw_ui(Viewer& v);
int run_view(int argc, char** argv);  // cmd_view's body

// loading.cpp
void start_load(Viewer& v, const std::string& path);
void poll_load(Viewer& v);       // installs a finished load
void cancel_load(Viewer& v);
std::unique_ptr<Prepared> prepare(std::unique_ptr<TraceModel> model, Progress* progress = nullptr);
void install(Viewer& v, std::unique_ptr<Prepared> p);

// timeline.cpp
void draw_timeline(Viewer& v, float x, float y, float w, float h);
void select(Viewer& v, render::ItemRef r, bool fit);
void focus_on(Viewer& v, render::ItemRef r);  // select and zoom to it
void animate_to(Viewer& v, double t0, double t1);
void update_metrics(Viewer& v);

// levels.cpp
void draw_breadcrumbs(Viewer& v);
void draw_levels(Viewer& v);
// details.cpp / summary.cpp / search.cpp
void draw_details(Viewer& v);
void draw_summary(Viewer& v);
void draw_search_bar(Viewer& v);
void run_search(Viewer& v);
void search_step(Viewer& v, int dir);
// files.cpp
void load_recent(Viewer& v);
void add_recent(Viewer& v, const std::string& path);
void open_file_browser(Viewer& v);
void draw_file_browser(Viewer& v);
// screenshot.cpp
struct ImageStats {
  int width = 0, height = 0;
  size_t distinct_colours = 0;
  double non_background = 0;  // share of pixels away from the most common colour
  double mean_luma = 0;
};
bool save_screenshot(const std::string& path, int width, int height, std::string& error, ImageStats* stats = nullptr);

std::string fmt_time(const Viewer& v, double ns);  // since trace start

}  // namespace strata::viewer
