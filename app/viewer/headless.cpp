// Headless runs of the viewer (`strata view FILE --screenshot/--dump-layout/--bench-frames`):
// the same frames a person sees, saved as a PNG, a layout dump with the panels' figures, or
// frame-time percentiles.
#include "app/cli.h"
#include "app/viewer/viewer.h"

#include "core/json_writer.h"
#include "render/flows.h"

#include <imgui.h>

#include <GLFW/glfw3.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>
#include <utility>

namespace strata::viewer {

namespace {

// What the panels show: the Summary tab's figures (the same writer as `strata summary
// --json`) and the details of the selection.
void write_panels(JsonWriter& j, Viewer& v) {
  j.key("panels").begin_object();
  if (v.trace->annotation) {
    j.key("summary").begin_object();
    write_summary_panel_fields(j, *v.trace->annotation);
    j.end_object();
  }
  if (v.timeline.range.active) {
    j.key("range").begin_object();
    write_range_fields(j, v.timeline.range.figures);
    j.end_object();
  }
  if (v.trace->whatif) {
    j.key("whatif").begin_object();
    write_whatif_fields(j, v);
    j.end_object();
  }
  if (v.trace->annotation) {  // the Summary tab's ranked tables, in the order shown
    j.key("summary_tables").begin_object();
    write_summary_tables_fields(j, v);
    j.end_object();
  }
  if (v.trace->annotation) {  // the Roofline tab's points and roofs (laid out for the dump when never shown)
    j.key("roofline").begin_object();
    write_roofline_fields(j, v);
    j.end_object();
  }
  if (v.sel.memory_picked) {
    j.key("memory").begin_object();
    write_live_memory_fields(j, *v.trace->model, v.sel.memory);
    j.end_object();
  }
  const render::ItemRef sel = v.sel.hl.selected;
  if (sel.valid()) {
    j.key("details").begin_object();
    write_work_fields(j, v.trace->timeline.name_of(sel), v.sel.work);
    j.end_object();
  }
  j.end_object();
}

// What a person sees around the timeline: where the panels are (the splitters' doing), the
// breadcrumbs shown, the levels view's rows, the search and its results list, the selection's
// flows, the key map, and how far back the view can go.
void write_ui(JsonWriter& j, Viewer& v) {
  auto box = [&](std::string_view name, const Box& b) { write_box(j, name, b); };
  const TraceModel& m = *v.trace->model;
  j.key("ui").begin_object();
  const ImVec2 window = ImGui::GetIO().DisplaySize;
  box("window", {0, 0, window.x, window.y});
  box("timeline", v.panels.timeline_box);
  if (v.panels.show_details) box("details", v.panels.details_box);
  if (v.panels.show_levels) box("bottom", v.panels.bottom_box);
  box("crumbs_area", v.panels.crumbs_box);
  box("search_bar", v.search.box);
  j.key("crumbs").begin_array();
  for (const std::string& c : v.panels.crumbs) j.value(c);
  j.end_array();
  j.field("crumbs_w", double(v.panels.crumbs_w));
  j.field("levels_content_h", double(v.panels.levels_content_h)).field("levels_visible_h", double(v.panels.levels_visible_h));
  j.field("levels_scroll_y", double(v.panels.levels_scroll_y));
  j.key("levels_sizing").begin_object().field("mode", render::level_sizing_key(v.panels.levels_sizing));
  write_choices(j, "buttons", v.panels.levels_sizing_buttons);  // empty before the Levels tab is shown
  j.end_object();
  j.key("tabs").begin_array();  // the bottom panel's tabs shown, and the one in front
  for (const BottomTab& t : bottom_tabs())
    if (t.available(v)) j.value(std::string_view(t.name));
  j.end_array();
  j.field("tab", std::string_view(v.panels.shown_tab));
  j.field("keymap_open", v.panels.show_keymap).field("history", uint64_t(v.timeline.history.size()));
  j.field("browser_error", std::string_view(v.browser.error));  // File ▸ Open / Load model structure
  j.key("browser").begin_object();
  write_browser_fields(j, v);
  j.end_object();
  j.key("range").begin_object();
  write_range_marks(j, v);
  j.end_object();
  // The details panel's scroll and GPU ops columns, the bottom panel's room, the gutter.
  j.field("details_scroll_y", double(v.panels.details_scroll_y)).field("bottom_lines", double(v.panels.bottom_lines));
  j.key("kernel_columns").begin_array();
  for (const std::string& c : v.panels.kernel_columns) j.value(c);
  j.end_array();
  j.field("gutter_w", double(gutter_width(v, v.panels.timeline_box.w - 2))).field("titles_w", double(v.trace->titles_w));
  const SearchState& s = v.search;
  j.key("search").begin_object();
  j.field("query", std::string_view(s.query)).field("matches", uint64_t(s.matches.size())).field("current", s.current);
  j.field("narrowed", s.narrowed == kNoStr ? std::string_view() : m.strings.view(s.narrowed)).field("list_open", s.list_open);
  j.field("active", s.was_active);
  j.key("rows").begin_array();  // the results list's names as drawn
  for (const auto& [name, b] : s.rows) {
    j.begin_object().field("name", m.strings.view(name));
    write_box(j, "box", b);
    j.end_object();
  }
  j.end_array();
  j.key("names").begin_array();
  for (size_t i = 0; i < s.names.size() && i < 100; ++i) {
    const render::NameMatches& n = s.names[i];
    j.begin_object().field("name", m.strings.view(n.name)).field("count", uint64_t(n.count)).field("total_ns", n.total);
    j.field("longest_ns", n.longest == kNoEvent ? Ns(0) : m.ev.dur[n.longest]).end_object();
  }
  j.end_array();
  j.end_object();
  j.key("flows").begin_array();
  if (v.sel.hl.selected.kind == render::ItemRef::Event)
    for (const render::Flow& f : render::flows_of(m, v.sel.hl.selected.index)) {
      j.begin_object().field("kind", std::string_view(render::flow_kind_name(f.kind))).field("preceding", f.preceding);
      j.field("name", m.name_of(f.other)).field("start_ns", m.ev.start[f.other]).end_object();
    }
  j.end_array();
  j.end_object();
}

// The open job: its ranks, which one the timeline shows, and what the overview marks.
void write_job(JsonWriter& j, Viewer& v) {
  const Job& job = *v.job_view.job;
  j.key("job").begin_object();
  j.field("ranks", uint64_t(job.data.size())).field("shown_rank", job.ranks[v.job_view.shown].file.rank);
  j.field("stragglers", uint64_t(job.analysis.stragglers.size())).field("selected_collective", int64_t(v.job_view.instance));
  j.key("clock_offsets_ns").begin_array();
  for (Ns o : job.analysis.clock_offset) j.value(o);
  j.end_array();
  j.end_object();
}

}  // namespace

void write_box(JsonWriter& j, std::string_view name, const Box& b) {
  j.key(name).begin_object();
  j.field("x", double(b.x)).field("y", double(b.y)).field("w", double(b.w)).field("h", double(b.h));
  j.end_object();
}

void write_choices(JsonWriter& j, std::string_view name, const std::vector<Choice>& choices) {
  j.key(name).begin_array();
  for (const Choice& c : choices) {
    j.begin_object().field("name", std::string_view(c.name));
    write_box(j, "box", c.box);
    j.end_object();
  }
  j.end_array();
}

// A load under way: what it reads, and a job's ranks as the last frame showed them.
void write_loading(JsonWriter& j, const LoadJob& l) {
  j.key("loading").begin_object();
  j.field("path", std::string_view(l.path)).field("ranks_total", uint64_t(l.ranks_total.load()));
  j.key("ranks").begin_array();
  for (const LoadJob::RankArrived& a : l.arrived_shown) {
    j.begin_object().field("rank", a.rank).field("file", std::string_view(a.file));
    j.field("iterations", uint64_t(a.iterations)).field("median_ns", a.median);
    j.end_object();
  }
  j.end_array();
  j.end_object();
}

std::string dump_layout(Viewer& v, const ImageStats* img) {
  JsonWriter j;
  j.begin_object();
  if (img) {
    j.key("image").begin_object();
    j.field("width", img->width).field("height", img->height).field("distinct_colours", uint64_t(img->distinct_colours));
    j.field("non_background", img->non_background).field("mean_luma", img->mean_luma);
    j.end_object();
  }
  const render::FrameLayout& fl = v.timeline.frame;
  j.field("width", double(v.timeline.view.width_px)).field("view_t0", v.timeline.view.t0).field("view_t1", v.timeline.view.t1());
  j.field("rows", uint64_t(fl.rows.size())).field("items", uint64_t(fl.items.size()));
  j.field("rects", uint64_t(fl.rects.size())).field("folded", uint64_t(fl.folded_items)).field("labels", uint64_t(fl.labels));
  j.field("layout_ms", v.timeline.layout_ms);
  // The dialogs (and lists over the panels) the last frame drew, with or without a trace.
  j.key("dialogs").begin_array();
  for (const auto& [name, b] : v.panels.dialogs) {
    j.begin_object().field("name", std::string_view(name));
    j.field("x", double(b.x)).field("y", double(b.y)).field("w", double(b.w)).field("h", double(b.h));
    j.end_object();
  }
  j.end_array();
  if (v.loading) write_loading(j, *v.loading);
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
    j.key("gutter").begin_array();  // where each section header and lane title is drawn
    for (const render::GutterLabel& g : fl.gutter) {
      j.begin_object().field("section", g.section);
      j.field("title", std::string_view(g.section ? tl.sections[g.index].title : tl.lanes[g.index].title));
      j.field("y0", double(g.y0)).field("y1", double(g.y1)).end_object();
    }
    j.end_array();
    j.key("path").begin_array();
    for (const render::ItemRef& r : v.sel.path) j.value(tl.name_of(r));
    j.end_array();
    j.field("selected", tl.name_of(v.sel.hl.selected));
    // The model structure the layers are named by, and the first layers' paths (the names the
    // timeline, the levels and the summary show).
    j.field("model_structure", std::string_view(v.trace->model_file));
    j.key("layer_paths").begin_array();
    if (v.trace->annotation) {
      const AnnotationTree& t = v.trace->annotation->tree;
      for (NodeId n = 0, shown = 0; n < t.size() && shown < 64; ++n)
        if (t.kind[n] == NodeKind::Layer) j.value(t.path(n)), ++shown;
    }
    j.end_array();
    j.field("related", uint64_t(v.sel.hl.related.size())).field("flows", uint64_t(v.sel.flows.size()));
    j.key("texts").begin_array();
    for (size_t i = 0; i < fl.texts.size() && i < 400; ++i)
      j.value(std::string_view(fl.text).substr(fl.texts[i].offset, fl.texts[i].len));
    j.end_array();
    j.field("bytes_per_event", v.trace->model->ev.size()
                                   ? double(v.trace->timeline.tiers().bytes() + v.trace->timeline.view_bytes()) /
                                         double(v.trace->model->ev.size())
                                   : 0.0);
    write_panels(j, v);
    write_ui(j, v);
    j.key("compare").begin_object();  // File ▸ Compare… (--compare): the Compare tab's figures
    write_compare_fields(j, v);
    j.end_object();
    if (v.job_view.job) write_job(j, v);
  }
  j.end_object();
  return j.str();
}

bool save_outputs(Viewer& v, const HeadlessRun& run) {
  bool ok = true;
  ImageStats stats;
  if (!run.shot.empty()) {
    v.capture.path = run.shot;
    v.capture.stats = &stats;
    frame(v);
    v.capture.stats = nullptr;
    if (!v.capture.error.empty()) {
      std::fprintf(stderr, "strata view: %s\n", v.capture.error.c_str());
      ok = false;
    }
  }
  if (!run.dump.empty()) {
    std::ofstream out(run.dump);
    out << dump_layout(v, run.shot.empty() ? nullptr : &stats) << "\n";
    if (!out) std::fprintf(stderr, "strata view: cannot write %s\n", run.dump.c_str()), ok = false;
  }
  return ok;
}

// --while-loading N: frames until N ranks of the job have arrived (or the load ended), then
// the outputs of that frame; the load is cancelled after.
int run_while_loading(Viewer& v, const HeadlessRun& run) {
  LoadJob& l = *v.loading;
  auto arrived = [&] {
    const std::lock_guard<std::mutex> lock(l.arrived_mutex);
    return l.arrived.size();
  };
  while (!l.done && arrived() < run.while_loading) {
    glfwPollEvents();
    frame(v);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const size_t seen = arrived(), total = l.ranks_total;
  if (total == 0) std::fprintf(stderr, "strata view: --while-loading is for a job (a folder, or several files)\n");
  else if (seen < run.while_loading) std::fprintf(stderr, "strata view: the load ended with %zu of %zu ranks\n", seen, run.while_loading);
  frame(v);
  const bool ok = save_outputs(v, run);
  cancel_load(v);  // ends the load and frees it
  return ok && total > 0 && seen >= run.while_loading ? 0 : 1;
}

int run_headless(Viewer& v, const HeadlessRun& run) {
  if (run.while_loading > 0) return run_while_loading(v, run);
  v.loading->worker.join();
  v.loading->worker = std::thread();
  v.loading->done = true;
  if (!v.loading->result) {
    std::fprintf(stderr, "strata: %s\n", v.loading->error.c_str());
    return 1;
  }
  const auto started = v.loading->started;
  frame(v);  // the window's size, for the new trace's rows
  if (v.loading->job) adopt_job(v, *v.loading);
  else install(v, std::move(v.loading->result));
  v.loading.reset();
  bool compared = true;
  if (!v.compare_next.empty()) {  // --compare: run B read and compared as File ▸ Compare… would
    start_compare(v, std::exchange(v.compare_next, {}));
    while (v.loading && !v.loading->done) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    poll_load(v);  // shows it, or says why not (v.error, stderr)
    compared = has_comparison(v);
  }
  frame(v);  // settles the layout (panel sizes, fonts)
  if (run.bench_frames > 0)
    std::printf("first frame %.2f s after the load began%s\n",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(),
                v.job_view.job ? " (the job's overview and its first rank's tracks)" : "");
  if (!run.focus.empty()) {
    render::ItemRef r = render::resolve_focus(v.trace->timeline, run.focus);
    if (!r.valid()) {
      std::fprintf(stderr, "strata view: --focus '%s' matched nothing: no item on the timeline has that name or path\n",
                   run.focus.c_str());
      return 1;
    }
    focus_on(v, r);
  }
  double from = 0, to = 0;
  if (!run.range.empty() && std::sscanf(run.range.c_str(), "%lf:%lf", &from, &to) == 2)
    set_range(v, v.trace->model->time_begin + Ns(from * 1e6), v.trace->model->time_begin + Ns(to * 1e6));
  if (!run.memory_at.empty() && v.trace->annotation) {
    std::string error;
    const uint32_t e = memory_event_for(*v.trace->model, *v.trace->annotation, run.memory_at, error);
    if (e == UINT32_MAX) std::fprintf(stderr, "strata view: %s\n", error.c_str());
    else pick_memory(v, e);
  }
  if (!run.whatif.empty() && !choose_whatif(v, run.whatif)) {
    std::fprintf(stderr, "strata view: --whatif '%s' is not a scenario\n", run.whatif.c_str());
    return 2;
  }
  if (!run.keys.empty() && !press_keys(v, run.keys)) return 2;
  if (run.bench_frames > 0) bench_frames(v, run.bench_frames);
  // A few frames so the panels and the view settle (animations are immediate headless), and
  // the What-if tab's replay and any search finish (a frame starts either).
  for (int i = 0; i < 3 || whatif_busy(v) || v.search.job; ++i) {
    glfwPollEvents();
    poll_search(v);
    frame(v);
    if (whatif_busy(v) || v.search.job) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  frame(v);
  return save_outputs(v, run) && compared ? 0 : 1;
}

}  // namespace strata::viewer
