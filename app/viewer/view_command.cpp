// `strata view`: its options (a CLI11 subcommand: app/commands.h), and the interactive main loop
// (headless runs: headless.cpp).
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

// What `strata view` was given.
struct ViewArgs {
  std::vector<std::string> inputs;  // one trace, or a job: a directory or several files
  HeadlessRun run;
  std::string size;  // --size WxH
  bool no_details = false, no_levels = false;
  std::string model_file;
  std::string tab;
  std::string compare;  // --compare B
  // --attach and its recording (parse_attach_option reads them).
  std::string attach_pid, attach_job, live_shot, duration, iterations, output;
  bool attach_dialog = false;
};

// The attach options as parse_attach_option takes them; false with `error` when one is bad.
bool attach_request(const ViewArgs& a, AttachRequest& attach, std::string& error) {
  OptionWords w;
  // --live-screenshot before --attach/--attach-job: parse_attach_option sets `job` on each of the three.
  w.value("--live-screenshot", a.live_shot);
  w.value("--attach", a.attach_pid);
  w.value("--attach-job", a.attach_job);
  w.value("--duration", a.duration);
  w.value("--iterations", a.iterations);
  w.value("-o", a.output);
  w.flag("--attach-dialog", a.attach_dialog);
  std::vector<char*> argv = w.argv();
  const int argc = static_cast<int>(argv.size());
  for (int i = 0; i < argc; ++i)
    if (!parse_attach_option(argc, argv.data(), i, attach, error) || !error.empty()) return false;
  return true;
}

int run_view_args(const CLI::App& sub, ViewArgs& args) {
  const std::vector<std::string>& inputs = args.inputs;
  HeadlessRun& run = args.run;
  int width = 1600, height = 1000;
  if (!args.size.empty() && !parse_size(args.size, width, height)) return usage_error(sub, "--size WxH, e.g. 1920x1080");
  const bool no_details = args.no_details, no_levels = args.no_levels;
  const std::string& model_file = args.model_file;
  AttachRequest attach;
  if (std::string error; !attach_request(args, attach, error)) return usage_error(sub, error);
  const bool headless = !run.shot.empty() || !run.dump.empty() || run.bench_frames > 0;
  if (headless && inputs.empty() && !attach.wanted())
    return usage_error(sub, "--screenshot, --dump-layout and --bench-frames need a FILE (or --attach)");
  if (run.while_loading > 0 && (run.shot.empty() && run.dump.empty()))
    return usage_error(sub, "--while-loading N needs --screenshot or --dump-layout: what to save while the job loads");
  if (!args.compare.empty() && inputs.empty()) return usage_error(sub, "--compare B needs a FILE (A) to compare it with");
  auto v = std::make_unique<Viewer>();
  if (!model_file.empty()) {
    std::string error;
    if (!read_model_file(model_file, v->annotate, error)) return std::fprintf(stderr, "strata view: %s\n", error.c_str()), 1;
    v->annotate_model_file = absolute_path(model_file);
  }
  v->capture.headless = headless;
  v->panels.show_details = !no_details;
  v->panels.show_levels = !no_levels;
  v->panels.bottom_tab = std::string_view(args.tab);  // by name, as the tab table knows them
  v->compare_next = args.compare;  // the Compare tab comes to the front when it is ready
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

}  // namespace

}  // namespace strata::viewer

Command add_view(CLI::App& strata) {
  using namespace strata::viewer;
  auto args = std::make_shared<ViewArgs>();
  CLI::App* sub = add_subcommand(
      strata, "view",
      "the viewer (what `strata FILE` opens); headless: save a PNG, dump\n"
      "the layout, time frames; --attach: record a running job, shown live",
      "strata view [FILE | DIR | FILE1 FILE2 ...] [OPTIONS]   (a DIR, several files: a job)\n"
      "strata view FILE --screenshot OUT.png [--size WxH] [--focus PATH] [--keys KEYS]\n"
      "strata view --attach PID [--duration S | --iterations N] [--live-screenshot MID.png]\n"
      "            [--screenshot END.png]");
  add_inputs(*sub, args->inputs, false);
  sub->add_option("--screenshot", args->run.shot, "render headless, save a PNG and exit")->type_name("OUT.png");
  sub->add_option("--size", args->size, "the window's size (default 1600x1000)")->type_name("WxH");
  sub->add_option("--dump-layout", args->run.dump, "headless: what was laid out, and the panels' figures, as JSON")
      ->type_name("OUT.json");
  sub->add_option("--bench-frames", args->run.bench_frames, "headless: time N frames zooming from the whole trace to a kernel")
      ->type_name("N")
      ->check(CLI::Validator(CLI::PositiveNumber).description(""));
  sub->add_option("--while-loading", args->run.while_loading,
                  "headless, a job: the screenshot and layout dump once N of its ranks have loaded,\n"
                  "as the loading box shows them while the rest still load")
      ->type_name("N")
      ->check(CLI::Validator(CLI::PositiveNumber).description(""));
  sub->add_option("--focus", args->run.focus, "select and zoom to an item (a name, or a path of names);\n"
                                              "one that matches nothing is an error")
      ->type_name("PATH");
  sub->add_option("--keys", args->run.keys, "keys pressed after the focus, as a person would:\n"
                                            "\"?,Esc\", \"/,conv,Enter\"")
      ->type_name("KEYS");
  sub->add_option("--tab", args->tab, "the bottom panel's tab")
      ->type_name("levels|summary|job|batch|whatif|roofline|compare")
      ->check(CLI::IsMember({"levels", "summary", "job", "batch", "whatif", "roofline", "compare"}).description(""));
  sub->add_option("--compare", args->compare, "another run (B) compared with FILE (A), as File > Compare does")
      ->type_name("B");
  sub->add_flag("--no-details", args->no_details, "hide the details panel");
  sub->add_flag("--no-levels", args->no_levels, "hide the levels panel");
  sub->add_option("--range", args->run.range, "a measured range, in ms from the trace's start")->type_name("A:B");
  sub->add_option("--memory-at", args->run.memory_at, "what is alive then (ms from the trace's start, or the peak)")
      ->type_name("T|peak");
  add_model_option(*sub, args->model_file);
  sub->add_option("--whatif", args->run.whatif, "the What-if tab's scenario, e.g. kernels-2x (with --tab whatif)")
      ->type_name("SCENARIO");
  CLI::Option* pid = sub->add_option("--attach", args->attach_pid, "record from a running job as File > Attach does, shown live")
                         ->type_name("PID");
  sub->add_option("--attach-job", args->attach_job, "every rank under a launcher, together (into -o DIR)")
      ->type_name("LAUNCHER_PID")
      ->excludes(pid);
  sub->add_option("--duration", args->duration, "--attach: record S seconds (default 2)")->type_name("S");
  sub->add_option("--iterations", args->iterations, "--attach: record N iterations")->type_name("N");
  sub->add_option("-o", args->output, "--attach: where the recording goes")->type_name("FILE|DIR");
  sub->add_option("--live-screenshot", args->live_shot, "--attach: a PNG of the live view while it records")
      ->type_name("MID.png");
  sub->add_flag("--attach-dialog", args->attach_dialog, "open File > Attach (scripted)");
  return {sub, [sub, args] { return run_view_args(*sub, *args); }};
}

int strata::viewer::run_view(int argc, char** argv) { return run_one_command(add_view, argc, argv); }

bool viewer_display_available() {
  const char* d = std::getenv("DISPLAY");
  const char* w = std::getenv("WAYLAND_DISPLAY");
  return (d && *d) || (w && *w);
}

