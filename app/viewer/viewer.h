// The viewer: a GLFW window drawn with Dear ImGui on OpenGL 3.3. One file per feature:
//   window.cpp     the window, GL and Dear ImGui setup, one frame
//   view_command.cpp  `strata view`: its options and the interactive main loop
//   headless.cpp   headless runs: screenshot, layout dump (with the panels' figures)
//   bench.cpp      the frame benchmark: frame times, part by part
//   viewer.cpp     menus, the welcome and loading screens, layout of the panels
//   loading.cpp    loading on a worker thread (progress, cancel), preparing the view
//   timeline.cpp   the timeline: ruler, gutter, items, arrows, zoom/pan/select input
//   keys.cpp       keys: the window's (Esc closes what is open, `?`) and the timeline's
//   help.cpp       the key map and the colour legend (`?`)
//   counters.cpp   memory and counter lanes: axis, peak, capacity, value under the cursor
//   memory.cpp     what is alive at a moment on a memory lane: by category, layer, allocation
//   range.cpp      measuring a range of time, flags on the ruler
//   levels.cpp     the Hotline-style levels view and the breadcrumbs
//   details.cpp    the details panel
//   flows.cpp      the details panel's flows: what the selection came from and led to
//   summary.cpp    the summary panel (small charts)
//   batch.cpp      the Batch size tab: memory at the peak and throughput against the batch
//   whatif.cpp     the What-if tab: scenarios replayed, an iteration measured above predicted
//   compare.cpp    File ▸ Compare… and the Compare tab: a second run compared with the open trace
//   roofline.cpp   the Roofline tab: kernel classes on the device's roofline, kernels and layers' efficiency
//   search.cpp     search over names
//   files.cpp      File ▸ Open and File ▸ Load model structure browsers, recent files and
//                  the model structure chosen per trace
//   attach.cpp     File ▸ Attach: record from a running job, the live view while it records
//   job.cpp        a distributed job: the ranks' overview, one rank's tracks at a time, the job tabs
//   layout.cpp     splitters between the panels, dialogs kept inside the window
//   screenshot.cpp PNG capture
//   solid.cpp      untextured fills for runs of boxes and lines (software GL draws them faster)
#pragma once

#include "app/viewer/frame_parts.h"
#include "core/annotate/annotation.h"
#include "core/job/job.h"
#include "core/loader.h"
#include "core/predict.h"
#include "core/text_format.h"
#include "render/drill.h"
#include "render/ruler.h"
#include "render/search.h"
#include "render/timeline.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

struct GLFWwindow;
struct ImDrawList;
struct ImFont;

namespace strata::viewer {

struct Viewer;

// Everything built from a trace off the UI thread. The panels read the annotation's figures
// (the same that `strata summary` prints).
struct WhatIfView;  // whatif.cpp
struct WhatIfViewDelete {
  void operator()(WhatIfView* w) const;  // joins its worker first
};
struct Comparison;  // compare.cpp
struct ComparisonDelete {
  void operator()(Comparison* c) const;
};
struct RooflineView;  // roofline.cpp
struct RooflineViewDelete {
  void operator()(RooflineView* r) const;
};
struct SummaryTables;  // summary_tables.cpp
struct SummaryTablesDelete {
  void operator()(SummaryTables* t) const;
};

struct Prepared {
  std::unique_ptr<TraceModel> model;
  std::unique_ptr<Annotation> annotation;
  render::Timeline timeline;
  std::string model_file;    // the print(model) text the layers are named by (empty: none)
  float titles_w = 0;        // the widest lane title, marks included (the timeline's gutter fits it where there is room)
  BatchPrediction batch;     // the batch-size estimate from this trace (the Batch size tab)
  std::string batch_error;   // why there is none
  // Another run (B) compared with this one (A): the Compare tab (null: none).
  std::unique_ptr<Comparison, ComparisonDelete> comparison;
  std::unique_ptr<RooflineView, RooflineViewDelete> roofline;  // the Roofline tab's layout and picks (made on first use)
  std::unique_ptr<SummaryTables, SummaryTablesDelete> summary_tables;  // the Summary tab's ranked tables (made on first use)
  std::unordered_map<uint64_t, Ns> levels_gpu;  // the levels view's GPU time per item (levels.cpp), asked for every frame
  // The What-if tab's graph and replays, made on first use. Last: it goes (its worker
  // joined) before the model and annotation it reads.
  std::unique_ptr<WhatIfView, WhatIfViewDelete> whatif;
};

struct LoadJob {
  std::string path;
  Progress progress;
  std::atomic<bool> done{false};
  std::string error;
  std::unique_ptr<Prepared> result;
  std::thread worker;
  std::chrono::steady_clock::time_point started;
  AnnotateOptions options;
  std::string model_file;  // where options' model structure came from (empty: none)
  // Set: the open trace annotated again (another model structure), read from this model, which
  // the open trace owns; the result takes it over when it is installed.
  const TraceModel* reannotate = nullptr;
  bool choose = false;     // with `reannotate`: done, the model structure becomes the trace's choice
  bool keep_view = false;  // a newer version of the open trace (a recording): reinstall, not install
  std::unique_ptr<Job> job;  // a distributed job was opened: `result` is the rank shown first
  // While a job loads: its ranks as they arrive (the loading box's overview), of `ranks_total`.
  struct RankArrived {
    int64_t rank = -1;
    std::string file;
    size_t iterations = 0;  // complete ones
    Ns median = 0;          // their median time
  };
  std::mutex arrived_mutex;
  std::vector<RankArrived> arrived;
  std::vector<RankArrived> arrived_shown;  // as the last frame drew them, by rank (UI thread)
  std::atomic<size_t> ranks_total{0};  // set by the loader once it has listed the job's files
  uint32_t rank = 0;         // with `job` or `rank_switch`: the index in the job's ranks `result` shows
  bool rank_switch = false;  // `result` is another rank of the open job
  // Set: File ▸ Compare… — `path` is run B, compared with this open trace (A), which the worker
  // reads: the job is cancelled before A goes away. Done, `comparison` holds the result.
  const Prepared* compare_with = nullptr;
  std::unique_ptr<Comparison, ComparisonDelete> comparison;
};

// The open distributed job (`strata DIR`, several files): an overview row per rank above the
// timeline, which shows one rank's tracks at a time, all on the job's reference clock.
struct JobView {
  std::unique_ptr<Job> job;  // null: a single trace is open
  uint32_t shown = 0;        // index into job->ranks of the rank on the timeline
  int instance = -1;         // the selected collective (index into job->analysis.instances)
  int64_t compare_step = -1; // the Ranks tab compares this step across ranks
  Ns begin = 0, end = 0;     // the job's extent on the reference clock
};

// A rectangle on the screen, as the last frame drew it (the layout dump reports these).
struct Box {
  float x = 0, y = 0, w = 0, h = 0;
};

// A search on a worker thread: the UI thread only starts it and picks up its result.
struct SearchJob {
  std::string query;
  std::atomic<bool> cancel{false}, done{false};
  render::SearchResult result;
  std::thread worker;
  ~SearchJob();
};

struct SearchState {
  char query[256] = {};
  std::string ran;                   // the query the matches are for
  std::vector<EventId> matches;      // sorted by id (for highlighting)
  std::vector<EventId> by_time;      // navigation order
  std::vector<render::NameMatches> names;  // the results list: per name, count and time
  // A name picked from the results list: `matches` and `by_time` hold its occurrences only,
  // and `all` keeps every match for when the pick is undone.
  StrId narrowed = kNoStr;
  render::SearchResult all;
  int current = -1;
  int pending_step = 0;              // next/previous asked for while a search runs
  bool focus_request = false;
  bool list_open = false;            // the results list under the search box
  bool was_active = false;           // the search box had the keyboard last frame
  Box box;                           // the search bar (box, arrows, count) as last drawn; the list hangs below it
  std::vector<std::pair<StrId, Box>> rows;  // the list's names as last drawn (the layout dump)
  std::string file;                  // the file (or job) the query belongs to
  std::unordered_map<std::string, std::string> kept;  // the queries of other files opened this session
  std::unique_ptr<SearchJob> job;                  // the search for the current query
  std::vector<std::unique_ptr<SearchJob>> retired;  // superseded, finishing their last step
};

struct FileBrowser {
  enum class Purpose : uint8_t { Trace, Model, Compare };
  Purpose purpose = Purpose::Trace;  // File ▸ Open, File ▸ Load model structure, or File ▸ Compare
  bool open = false;
  std::string dir;
  std::vector<std::pair<std::string, bool>> entries;  // name, is directory
  // The entries chosen: a click or the arrows choose one; in File ▸ Open, Ctrl-click adds or
  // takes away one and Shift-click (or Shift+arrows) a run from `anchor`: several open as one job.
  std::vector<uint8_t> chosen;
  int picked = -1;  // the entry last clicked or moved to; Enter or a double-click opens it
  int anchor = -1;  // where a Shift-click's run starts
  char path_buf[1024] = {};  // a path typed (counted from `dir`); a pick leaves it alone
  bool typed_ahead = false;  // letters typed to the list went into the path: keep them, cursor at the end
  std::string error;         // what is wrong, said in the dialog
  size_t traces = 0;         // trace files in `dir`: File ▸ Open offers to open them as one job
  std::vector<Box> entry_boxes;  // as last drawn (the layout dump)
};

struct AttachState;
struct AttachStateDelete {
  void operator()(AttachState* a) const;  // attach.cpp: stops a recording in progress first
};

// A measured stretch of time and the flags dropped on the ruler.
struct RangeState {
  bool active = false;        // a range is measured (its figures are current)
  double t0 = 0, t1 = 0;
  RangeFigures figures;
  std::vector<double> flags;  // times, sorted
  bool dragging = false, from_ruler = false;
  double anchor = 0;          // where the drag began
  float drag_px = 0;
  // As the last frame drew them, for the layout dump: the ruler, and the labels between flags.
  Box ruler;
  std::vector<std::pair<std::string, Box>> flag_labels;
};

// A place to go back to (Esc, Backspace, Alt+Left): the view and what was selected there.
struct Place {
  double t0 = 0, t1 = 0;
  render::ItemRef selected;
};

// Where the person is on the timeline and what the last frame laid out.
struct TimelineState {
  render::TimeView view;
  std::vector<Place> history;  // oldest first, at most kMaxHistory
  static constexpr size_t kMaxHistory = 64;
  render::RowState rows;  // collapsed and pinned rows (kept across reloads)
  render::FrameLayout frame;
  float scroll_y = 0;
  float height = 0;             // visible height of the rows
  double layout_ms = 0;         // last layout's time
  bool dragging = false;
  float drag_total = 0;
  render::ItemRef hovered;
  uint32_t hovered_fold = 0;
  // Animation of the view towards a target (double-click, F, breadcrumbs).
  bool animating = false;
  double anim_t0 = 0, anim_t1 = 0;
  RangeState range;
};

// The selected item and what the panels show of it.
struct Selection {
  render::Highlight hl;
  std::vector<std::pair<EventId, EventId>> flows;
  std::vector<render::ItemRef> path;          // its focus path (breadcrumbs)
  WorkFigures work;                           // its GPU work and what bounds it (details)
  std::vector<render::ItemRef> levels_chosen;  // the item chosen in each row of the levels view
  // What is alive at a moment picked on a memory lane (the details panel shows it; its
  // allocating ops are highlighted).
  bool memory_picked = false;
  LiveMemory memory;
};

// Headless runs: the frame to save, and frame timings for the benchmark.
struct Capture {
  bool headless = false;
  std::string path;                  // set: the next frame is saved to this PNG before it is shown
  std::string error;
  struct ImageStats* stats = nullptr;  // where to put the capture's statistics
  bool finish_gl = false;            // glFinish before swapping (frame benchmark)
  bool pointer = false;              // --keys put the pointer somewhere (Move:X:Y): hovering counts headless too
  FrameParts parts;                  // where the last frame's time went
};

// The bottom panel's tabs, registered by name in one table (viewer.cpp), in the order they
// are shown: the panel draws those available, `--tab NAME` brings one to the front, and the
// layout dump names them (`ui.tabs`, `ui.tab`).
struct BottomTab {
  const char* name;                  // "levels", "summary", "batch", "whatif", "roofline", "job", "ranks"
  const char* title;                 // on the tab: "Levels", "Batch size", "What-if"
  const char* scroll_id;             // the child window it draws in
  void (*draw)(Viewer& v);
  bool (*available)(const Viewer& v);  // for the open trace or job
};
std::span<const BottomTab> bottom_tabs();
const BottomTab* find_bottom_tab(std::string_view name);  // null: no tab has that name

// A tab to bring to the front when the bottom panel is next drawn (`--tab`), by name.
struct TabRequest {
  std::string name;  // empty: none
  TabRequest& operator=(std::string_view tab_name);
};

// What the Summary tab's tables rank their rows by.
enum class RankBy : uint8_t { Gpu, Cpu, Wall };

// A named choice's button as the last frame drew it (the layout dump's click targets).
struct Choice {
  std::string name;
  Box box;
};

struct PanelState {
  bool show_levels = true, show_details = true;
  bool show_keymap = false;  // the key map and the colour legend, over everything (`?`)
  TabRequest bottom_tab;     // asked for, until the tabs are next drawn
  std::string shown_tab;     // the tab the last frame showed (its name)
  // Sizes the splitters were dragged to (0: a share of the window), kept for the session and
  // fitted to the window every frame.
  float details_w = 0, bottom_h = 0;
  bool escape_taken = false;  // this frame's Esc closed a menu, popup or overlay: it does nothing else
  render::ItemRef details_of;  // what the details panel showed last frame: another starts at its top
  float details_scroll_y = 0;   // the details panel's scroll, as last drawn
  std::vector<std::string> kernel_columns;  // the details panel's GPU ops table: its columns shown, as last drawn
  float bottom_lines = 0;  // lines of text the bottom panel's tab has room for, as last drawn
  // What the last frame drew, for the layout dump.
  Box timeline_box, details_box, bottom_box, crumbs_box;
  std::vector<std::string> crumbs;  // the breadcrumbs shown ("…" stands for a hidden run)
  float crumbs_w = 0;               // their width
  float levels_content_h = 0, levels_visible_h = 0, levels_scroll_y = 0;  // the levels view's rows, their room, the scroll
  std::vector<std::pair<std::string, Box>> dialogs;  // the dialogs drawn this frame
  RankBy summary_rank = RankBy::Gpu;  // the Summary tab's tables, kept across traces
  render::LevelSizing levels_sizing = render::LevelSizing::Wall;  // the levels view's blocks
  std::vector<Choice> summary_rank_buttons, levels_sizing_buttons;  // their toggles, as last drawn
};

struct Viewer {
  GLFWwindow* window = nullptr;
  float scale = 1.0f;  // content scale (high DPI)
  ImFont* font = nullptr;
  ImFont* font_bold = nullptr;
  render::FontMetrics metrics;

  std::unique_ptr<Prepared> trace;  // the open trace (null: none)
  std::unique_ptr<LoadJob> loading;  // a load in progress
  std::string error;                // shown in the window until dismissed
  std::unique_ptr<AttachState, AttachStateDelete> attach;  // the Attach dialog and its recording
  std::vector<std::string> recent;
  AnnotateOptions annotate;  // what every trace opened is annotated with (--model)
  std::string annotate_model_file;  // --model's file
  // The model structure (print(model) text) chosen per trace (its absolute path) with File ▸
  // Load model structure: used again whenever that trace is opened, this session and later
  // ones (kept beside the recent files). A trace with none here takes --model's.
  struct ModelChoice {
    std::string file;                // the text's file
    bool parsed = false;             // `tree` holds it (a choice from an earlier session is read on first use)
    std::vector<ModelModule> tree;
  };
  std::unordered_map<std::string, ModelChoice> models;
  std::string compare_next;  // --compare: run B, compared with the trace once it is open

  JobView job_view;
  TimelineState timeline;
  Selection sel;
  SearchState search;
  FileBrowser browser;
  PanelState panels;
  Capture capture;
  bool quit = false;
};

// window.cpp
bool init_window(Viewer& v, int width, int height, bool visible);
void shutdown_window(Viewer& v);
void frame(Viewer& v);           // one UI frame: new frame, draw, render, swap
// viewer.cpp
void draw_ui(Viewer& v);
// view_command.cpp
int run_view(int argc, char** argv);  // cmd_view's body

// loading.cpp
void start_load(Viewer& v, const std::string& path, bool keep_view = false);
// The options a trace is annotated with: --model's, or the model structure chosen for it
// (`model_file` says which file; a chosen file that cannot be read is said in v.error).
AnnotateOptions options_for(Viewer& v, const std::string& path, std::string& model_file);
// Annotates the open trace again on the worker with `tree` (empty: no model structure), with
// progress and cancel as a load; it replaces the open trace's annotation and view when done,
// keeping the visible range and the selection, and (`choose`) becomes the trace's choice.
void start_reannotate(Viewer& v, const std::string& model_file, std::vector<ModelModule> tree, bool choose);
std::unique_ptr<LoadJob> launch_load(const std::string& path, const AnnotateOptions& options = {});  // the worker alone, for the caller to poll
void poll_load(Viewer& v);       // installs a finished load
void cancel_load(Viewer& v);
std::unique_ptr<Prepared> prepare(std::unique_ptr<TraceModel> model, Progress* progress = nullptr, const AnnotateOptions& options = {});
void install(Viewer& v, std::unique_ptr<Prepared> p);  // a new trace: view, selection and collapsed rows reset
void show(Viewer& v, std::unique_ptr<Prepared> p);     // the same, keeping the collapsed rows
// Installs a grown version of the open trace (a recording read again): keeps the visible
// range (or the whole trace, if it was all in view), the scroll and the selection.
void reinstall(Viewer& v, std::unique_ptr<Prepared> p);

// timeline.cpp
void draw_timeline(Viewer& v, float x, float y, float w, float h);
void select(Viewer& v, render::ItemRef r, bool fit);
void scroll_to_row(Viewer& v, float y);  // scrolls the rows so that a row at `y` (row_y) is in view
void focus_on(Viewer& v, render::ItemRef r);  // select and zoom to it
void select_parent(Viewer& v);                  // U: the breadcrumb before the selection (back undoes it)
void animate_to(Viewer& v, double t0, double t1);  // remembers where the view was, for back
bool go_back(Viewer& v);                            // the last place remembered; false when none
void update_metrics(Viewer& v);
// range.cpp: measuring a range (Shift+drag, or a drag on the ruler) and flags on the ruler.
// handle_range_input returns true when it took the mouse (no pan, no selection then).
bool handle_range_input(Viewer& v, float area_x, bool in_area, bool in_ruler, bool hovered_window);
void draw_range_overlay(Viewer& v, float area_x, float area_w, float ruler_y, float rows_y, float bottom);
void draw_range_details(Viewer& v);
void clear_range(Viewer& v);
void set_range(Viewer& v, Ns t0, Ns t1);  // measures [t0, t1] (either order)
// counters.cpp: the memory and counter lanes' axis, peak and value under the cursor.
// True when `clicked` landed on a memory lane (it then shows what is alive there).
bool draw_counter_lanes(Viewer& v, float area_x, float rows_y, float area_w, bool hovered, bool clicked);
// memory.cpp: what is alive at a memory event (a click on a memory lane, --memory-at).
void pick_memory(Viewer& v, uint32_t event);  // shows it in the details panel, highlights the allocating ops
void draw_memory_details(Viewer& v);
// A bar of what is alive by category, with a line per category under it (the Summary tab).
void draw_memory_categories(Viewer& v, const LiveMemory& l, float width);
// keys.cpp: the timeline's keys; `mouse_x` in the timeline area when `mouse_in`.
void handle_keys(Viewer& v, float mouse_x, bool mouse_in);
void handle_window_keys(Viewer& v);  // before anything is drawn: Esc on what is open, `?`
bool typed(unsigned c);  // the character was typed this frame, outside a text field
bool any_popup_open();   // a menu, a dialog or the key map: the keys are its
// The window's key events (in place of Dear ImGui's GLFW callback, which they go on to): a key
// let go before any frame saw it down is let go at the end of the next frame instead
// (release_tapped_keys), so that a quick tap still counts as pressed.
void key_event(GLFWwindow* w, int key, int scancode, int action, int mods);
void release_tapped_keys();  // the end of a frame's UI
// help.cpp
void draw_keymap(Viewer& v);  // the key map and the colour legend, while panels.show_keymap
void colour_chip(Viewer& v, render::Rgba colour, const std::string& what);  // a legend's entry: a chip and its meaning
// layout.cpp
// A splitter between two panels, `thickness` across and `length` along, at the cursor:
// dragging it changes `size` (of the panel after it when `after`, else of the one before)
// within [min_size, max_size]; true while dragged.
bool splitter(const char* id, bool vertical, float thickness, float length, float& size, float min_size, float max_size, bool after);
// A dialog's default size and its place, fitted into the window; call before Begin (or
// begin_dialog), then note_dialog after it.
void place_dialog(float w, float h, float x, float y, bool centred);
// Begins a window over the panels (the popups' shade, a border) and notes it; false, and
// nothing to end, when it is not shown. `flags`: ImGuiWindowFlags.
bool begin_dialog(Viewer& v, const char* title, bool* open, int flags);
void note_dialog(Viewer& v, const char* name);  // keeps the current window inside, for the layout dump
// What the last item drawn (a group: the welcome screen's loading box, its recent files) covers,
// listed with the dialogs for the layout dump.
void note_item_box(Viewer& v, const char* name);
// Text wrapped at its spaces into the room left on the line (Dear ImGui's wrapping split
// "10.129 ms" after its point).
void text_wrapped(const Viewer& v, std::string_view text);
// Tooltips whose text wraps inside the window (noted as "tooltip" for the layout dump):
// begin_tooltip ... end_tooltip around Dear ImGui's text calls, or tooltip() with printf's format.
void begin_tooltip(Viewer& v);
void end_tooltip(Viewer& v);
void tooltip(Viewer& v, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// levels.cpp
void draw_breadcrumbs(Viewer& v);
void draw_levels(Viewer& v);
// details.cpp / summary.cpp / search.cpp
void draw_details(Viewer& v);
void draw_summary(Viewer& v);
// summary_tables.cpp: the Summary tab's ranked tables of phases, layers, kernels and CPU ops
// (the figures of `strata summary --json`) and the layout dump's panels.summary_tables.
void draw_rank_toggle(Viewer& v);  // "Rank by: GPU time | CPU time | wall time", above the tables
void draw_summary_tables(Viewer& v);
void write_summary_tables_fields(JsonWriter& j, Viewer& v);
const char* rank_by_key(RankBy r);  // "gpu", "cpu", "wall"
// A row of choices after `label` ("size by:"), `chosen` marked; returns the one clicked, else
// -1. `drawn` gets each button's box (the layout dump's click targets).
int choice_row(Viewer& v, const char* label, std::span<const char* const> names, int chosen, std::vector<Choice>& drawn);
void draw_batch_tab(Viewer& v);  // batch.cpp: memory and throughput against the batch size
// whatif.cpp: the What-if tab (its graph is built and replayed on a worker on first use).
void draw_whatif_tab(Viewer& v);
bool choose_whatif(Viewer& v, const std::string& scenario);  // --whatif: picks (or adds) a scenario; false on a bad spec
bool whatif_busy(const Viewer& v);                           // its worker is running
void write_whatif_fields(JsonWriter& j, Viewer& v);           // the layout dump's panels.whatif
// compare.cpp: run B loaded, annotated and compared with the open trace (A) on the loading
// worker (its progress and cancel), then shown in the Compare tab.
void start_compare(Viewer& v, const std::string& path);
void adopt_comparison(Viewer& v, LoadJob& done);  // poll_load: a finished comparison becomes the trace's
bool has_comparison(const Viewer& v);
void close_comparison(Viewer& v);
void draw_compare_tab(Viewer& v);
void write_compare_fields(JsonWriter& j, const Viewer& v);  // the layout dump's `compare`
// roofline.cpp: the Roofline tab (the kernel classes on the device's roofline, the top kernels
// and layers with their efficiency) and the layout dump's panels.roofline.
void draw_roofline_tab(Viewer& v);
void write_roofline_fields(JsonWriter& j, Viewer& v);
void write_box(JsonWriter& j, std::string_view name, const Box& b);  // headless.cpp: {x, y, w, h}
void write_choices(JsonWriter& j, std::string_view name, const std::vector<Choice>& choices);  // [{name, box}]
void write_browser_fields(JsonWriter& j, const Viewer& v);  // files.cpp: the layout dump's ui.browser
void write_range_marks(JsonWriter& j, const Viewer& v);     // range.cpp: ui.range: the ruler, flags and their labels
void draw_search_bar(Viewer& v);
void draw_search_list(Viewer& v);  // the results list, over the panels, while it is open
bool close_search_list(Viewer& v);  // false when it was not open
void poll_search(Viewer& v);
void reset_search(Viewer& v);  // stops any search: call before the model changes
// flows.cpp
void draw_flows(Viewer& v, EventId e);  // the details panel's flows of an event
// Selects `r` and brings it into view, keeping the zoom unless it is wider than the view.
void reveal(Viewer& v, render::ItemRef r);
// files.cpp
void load_recent(Viewer& v);  // and the model structures chosen per trace
void add_recent(Viewer& v, const std::string& path);
void open_file_browser(Viewer& v);
void open_model_browser(Viewer& v);  // File ▸ Load model structure (a single trace open)
void open_compare_browser(Viewer& v);  // File ▸ Compare… (a trace open)
std::string absolute_path(const std::string& path);  // the key of recent files and model choices
// Reads and parses a print(model) file; false with `error` naming the file and the line.
bool read_model_structure(const std::string& file, std::vector<ModelModule>& tree, std::string& error);
// The per-trace model choice: set (its text parsed) and kept beside the recent files, or
// forgotten (`file` empty).
void set_model_choice(Viewer& v, const std::string& trace_path, const std::string& file, std::vector<ModelModule> tree);
void draw_file_browser(Viewer& v);
// Files dropped on the window: one trace opens, a folder or several files open as one job, and
// one trace dropped with Shift or Ctrl held is compared with the open one (File ▸ Compare…).
void open_dropped(Viewer& v, const std::vector<std::string>& paths, bool compare);
// job.cpp
// A directory or several files; keep_view: the same job read again (a recording that grew).
void start_job_load(Viewer& v, const std::vector<std::string>& inputs, bool keep_view = false);
// While a job loads: the ranks loaded so far, their iterations and median iteration time, the
// slowest marked (the loading box's overview of the job).
void draw_ranks_arrived(Viewer& v, LoadJob& l);
std::unique_ptr<LoadJob> launch_job_load(const std::vector<std::string>& inputs);  // the worker alone
void show_rank(Viewer& v, uint32_t rank);  // loads (off the UI thread) and shows that rank's tracks
void adopt_job(Viewer& v, LoadJob& loaded);  // a finished job or rank load: take it over
void close_job(Viewer& v);                  // back to single traces
float draw_job_overview(Viewer& v, float x, float y, float w, float max_h);  // returns the height used
void draw_job_tab(Viewer& v);      // the job's summary: ranks, stragglers, communication
void draw_ranks_tab(Viewer& v);    // one step's phases, rank under rank
double time_origin(const Viewer& v);  // where shown times count from: the job's or the trace's start
float gutter_width(const Viewer& v, float w);  // the timeline's (and the overview's) label column
void measure_titles(Viewer& v);  // a trace shown: its lane titles' width, for the gutter
// attach.cpp
void open_attach(Viewer& v);
bool close_attach(Viewer& v);              // Esc: true when the dialog was open
void draw_attach(Viewer& v);               // the dialog, and following a recording (every frame)
void draw_recording_indicator(Viewer& v);  // in the menu bar while recording
// `strata view --attach PID [--duration S | --iterations N] [-o FILE] [--live-screenshot PNG]`
// records from a job as the dialog would; `--attach-dialog` only opens the dialog.
struct AttachRequest {
  int pid = 0;
  bool job = false;  // pid is a launcher: record every rank under it together (--attach-job)
  bool dialog = false;
  uint64_t duration_ms = 0;
  uint32_t iterations = 0;
  std::string output, live_shot;
  bool wanted() const { return pid > 0 || dialog; }
};
// Consumes argv[i] (and its value) when it is one of those options; `error` when malformed.
bool parse_attach_option(int argc, char** argv, int& i, AttachRequest& r, std::string& error);
void start_attach(Viewer& v, const AttachRequest& r);
// Headless: runs frames until the recording's final load is shown, then saves the screenshot
// and the layout dump; the --focus path is selected on the first live view.
struct HeadlessRun {
  std::string shot, dump, focus;  // --screenshot, --dump-layout, --focus
  std::string range;              // --range A:B (ms from the trace's start): a measured range
  std::string memory_at;          // --memory-at T|peak: what is alive then, in the details panel
  std::string whatif;             // --whatif SCENARIO: the What-if tab's choice
  std::string keys;               // --keys: pressed after the focus, as a person would ("?,Esc", "/,conv,Enter")
  int bench_frames = 0;           // --bench-frames
  size_t while_loading = 0;       // --while-loading N: the outputs once N ranks of a job have loaded, the rest still loading
};
int run_attach_headless(Viewer& v, const AttachRequest& r, const HeadlessRun& out);
// press_keys.cpp: presses `keys` (comma-separated: a named key such as Esc, Enter, Backspace,
// Up, with Ctrl+/Shift+/Alt+/Tap+ as wanted, text to type, or the mouse: Click:X:Y,
// DoubleClick:X:Y, Move:X:Y, Wheel:X:Y:N) through the window's events; false on a key it
// cannot press.
bool press_keys(Viewer& v, const std::string& keys);
// screenshot.cpp
struct ImageStats {
  int width = 0, height = 0;
  size_t distinct_colours = 0;
  double non_background = 0;  // share of pixels away from the most common colour
  double mean_luma = 0;
};
bool save_screenshot(const std::string& path, int width, int height, std::string& error, ImageStats* stats = nullptr);
// solid.cpp: what is drawn between begin_solid and end_solid (in one draw list) must not be text.
void begin_solid(ImDrawList* dl);
void end_solid(ImDrawList* dl);
void forget_solid();  // the GL context is going away

std::string fmt_time(const Viewer& v, double ns);  // since trace start
// headless.cpp
// Waits for the load, then focuses, benchmarks, saves the screenshot and the dump; the exit code.
int run_headless(Viewer& v, const HeadlessRun& run);
// bench.cpp: times `frames` frames zooming from the whole trace to a kernel and prints where
// their time went (--bench-frames).
void bench_frames(Viewer& v, int frames);
// Saves the screenshot and the dump `run` asks for (either may be empty); false on an error.
bool save_outputs(Viewer& v, const HeadlessRun& run);
// The --dump-layout JSON: what the frame laid out, the image's statistics, and the panels'
// figures (`panels.summary`, `panels.details`).
std::string dump_layout(Viewer& v, const ImageStats* img);

}  // namespace strata::viewer
