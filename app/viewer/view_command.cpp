// `strata view`: its options, and the interactive main loop (headless runs: headless.cpp).
#include "app/cli.h"
#include "app/viewer/viewer.h"

#include "app/commands.h"

#include <imgui.h>

#include <GLFW/glfw3.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string_view>

namespace strata::viewer {

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
             "                   [--tab levels|summary|job|batch|whatif] [--keys \"?,Esc\"]   (keys pressed after the focus)\n"
             "                   [--range A:B]   (a measured range, in ms from the trace's start)\n"
             "                   [--memory-at T|peak]   (what is alive then, in ms from the trace's start)\n"
             "                   [--model MODEL.txt]   (print(model): layers take its modules' attribute paths)\n"
             "                   [--whatif SCENARIO]   (the What-if tab's choice, e.g. kernels-2x; with --tab whatif)\n"
             "                   [--attach PID [--duration S | --iterations N] [-o FILE] [--live-screenshot OUT.png]]\n"
             "                   [--attach-job LAUNCHER_PID ... (every rank under it, into -o DIR)]\n"
             "                   [--attach-dialog]   (File > Attach, scripted)\n"
             "       strata view DIR | FILE1 FILE2 ... [the options above]   (a job: one trace per rank)\n",
             out);
}

}  // namespace

int run_view(int argc, char** argv) {
  std::vector<std::string> inputs;  // one trace, or a job: a directory or several files
  HeadlessRun run;
  int width = 1600, height = 1000;
  bool no_details = false, no_levels = false;
  std::string model_file;
  int tab = 0;
  AttachRequest attach;
  std::string attach_error;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (a == "--screenshot") {
      const char* p = next();
      if (!p) return usage_view(stderr), 2;
      run.shot = p;
    } else if (a == "--dump-layout") {
      const char* p = next();
      if (!p) return usage_view(stderr), 2;
      run.dump = p;
    } else if (a == "--size") {
      const char* p = next();
      if (!p || !parse_size(p, width, height)) return std::fprintf(stderr, "strata view: --size WxH, e.g. 1920x1080\n"), 2;
    } else if (a == "--range") {
      const char* p = next();
      if (!p) return usage_view(stderr), 2;
      run.range = p;
    } else if (a == "--whatif") {
      const char* p = next();
      if (!p) return usage_view(stderr), 2;
      run.whatif = p;
    } else if (a == "--model") {
      const char* p = next();
      if (!p) return usage_view(stderr), 2;
      model_file = p;
    } else if (a == "--memory-at") {
      const char* p = next();
      if (!p) return usage_view(stderr), 2;
      run.memory_at = p;
    } else if (a == "--focus") {
      const char* p = next();
      if (!p) return usage_view(stderr), 2;
      run.focus = p;
    } else if (a == "--keys") {
      const char* p = next();
      if (!p) return usage_view(stderr), 2;
      run.keys = p;
    } else if (a == "--bench-frames") {
      const char* p = next();
      if (!p || (run.bench_frames = std::atoi(p)) <= 0) return std::fprintf(stderr, "strata view: --bench-frames N\n"), 2;
    } else if (a == "--no-details") {
      no_details = true;
    } else if (a == "--no-levels") {
      no_levels = true;
    } else if (a == "--tab") {
      const char* p = next();
      const std::string_view t = p ? p : "";
      tab = t == "summary" ? 1 : t == "job" ? 2 : t == "batch" ? 3 : t == "whatif" ? 4 : 0;
    } else if (parse_attach_option(argc, argv, i, attach, attach_error)) {
      if (!attach_error.empty()) return std::fprintf(stderr, "strata view: %s\n", attach_error.c_str()), 2;
    } else if (a == "-h" || a == "--help") {
      usage_view(stdout);
      return 0;
    } else if (a.starts_with("-")) {
      std::fprintf(stderr, "strata view: unknown option '%s'\n", argv[i]);
      usage_view(stderr);
      return 2;
    } else {
      inputs.emplace_back(a);
    }
  }
  const bool headless = !run.shot.empty() || !run.dump.empty() || run.bench_frames > 0;
  if (headless && inputs.empty() && !attach.wanted()) {
    std::fprintf(stderr, "strata view: --screenshot, --dump-layout and --bench-frames need a FILE (or --attach)\n");
    return 2;
  }
  auto v = std::make_unique<Viewer>();
  if (!model_file.empty()) {
    std::string error;
    if (!read_model_file(model_file, v->annotate, error)) return std::fprintf(stderr, "strata view: %s\n", error.c_str()), 2;
    v->annotate_model_file = absolute_path(model_file);
  }
  v->capture.headless = headless;
  v->panels.show_details = !no_details;
  v->panels.show_levels = !no_levels;
  v->panels.bottom_tab = tab > 0 ? tab : -1;
  if (!init_window(*v, width, height, true)) {
    std::fprintf(stderr, "strata: cannot open a window (no display, or no OpenGL 3.3)%s\n",
                 headless ? "; run under xvfb-run for headless use" : "");
    return 1;
  }
  load_recent(*v);
  std::error_code ec;
  if (inputs.size() > 1 || (inputs.size() == 1 && std::filesystem::is_directory(inputs[0], ec))) start_job_load(*v, inputs);
  else if (!inputs.empty()) start_load(*v, inputs[0]);
  if (attach.wanted()) start_attach(*v, attach);

  if (!headless) {
    while (!glfwWindowShouldClose(v->window) && !v->quit) {
      bool busy = v->loading || v->search.job || v->timeline.animating || v->timeline.dragging || ImGui::GetIO().WantTextInput;
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

  const int rc = attach.wanted() ? run_attach_headless(*v, attach, run) : run_headless(*v, run);
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
